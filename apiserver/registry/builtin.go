package registry

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/qos"
)

// eventTTL is how long Events live, as in Kubernetes (--event-ttl).
const eventTTL = time.Hour

// EventsKeyPrefix is where Events of both APIs are stored.
const EventsKeyPrefix = "/registry/events/"

// spec is the compact form the table below is written in.
type spec struct {
	group, version, name, kind string
	namespaced                 bool
	short, categories          []string
	newObj, newList            func() runtime.Object
	status, generation         bool
	createWithStatus           bool
	deploymentAnnotations      bool
	scale                      *ScalePaths
	fields                     []string
	fieldLabels                map[string]FieldLabel
	nameFunc                   apivalidation.ValidateNameFunc
	onCreate, onAdmitted       func(runtime.Object)
	onUpdate                   func(obj, old runtime.Object)
	ttl                        time.Duration
	storagePrefix              string
	stored                     *StoredForm
	finalize, binding, evict   bool
	createOnUpdate             bool
}

var replicasScale = &ScalePaths{SpecReplicas: "spec.replicas", StatusReplicas: "status.replicas", LabelSelector: "spec.selector"}

// A ReplicationController's selector is a map of labels, which its Scale
// shows in selector syntax, as Kubernetes' does.
var labelSetScale = &ScalePaths{SpecReplicas: "spec.replicas", StatusReplicas: "status.replicas", LabelSelector: "spec.selector", LabelSet: true}

func builtinSpecs() []spec {
	all := []string{"all"}
	return []spec{
		// core/v1
		{group: "", version: "v1", name: "namespaces", kind: "Namespace", short: []string{"ns"},
			newObj: func() runtime.Object { return &corev1.Namespace{} }, newList: func() runtime.Object { return &corev1.NamespaceList{} },
			status: true, fields: []string{"status.phase"}, nameFunc: apivalidation.ValidateNamespaceName, onCreate: namespaceOnCreate, finalize: true},
		{group: "", version: "v1", name: "nodes", kind: "Node", short: []string{"no"},
			newObj: func() runtime.Object { return &corev1.Node{} }, newList: func() runtime.Object { return &corev1.NodeList{} },
			// A kubelet registers its node with the status it has.
			status: true, createWithStatus: true, fields: []string{"spec.unschedulable"}},
		{group: "", version: "v1", name: "pods", kind: "Pod", namespaced: true, short: []string{"po"}, categories: all,
			newObj: func() runtime.Object { return &corev1.Pod{} }, newList: func() runtime.Object { return &corev1.PodList{} },
			// Kubernetes sets a pod's generation and moves it with its spec
			// whatever the PodObservedGenerationTracking gate says (KEP-5067).
			status: true, generation: true, onCreate: podOnCreate, onAdmitted: podOnAdmitted, binding: true, evict: true,
			fields:      []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
			fieldLabels: map[string]FieldLabel{"spec.hostNetwork": {Path: "spec.hostNetwork", Absent: "false"}}},
		{group: "", version: "v1", name: "services", kind: "Service", namespaced: true, short: []string{"svc"}, categories: all,
			newObj: func() runtime.Object { return &corev1.Service{} }, newList: func() runtime.Object { return &corev1.ServiceList{} },
			status: true, nameFunc: apivalidation.NameIsDNS1035Label, fields: []string{"spec.clusterIP", "spec.type"}},
		{group: "", version: "v1", name: "replicationcontrollers", kind: "ReplicationController", namespaced: true, short: []string{"rc"}, categories: all,
			newObj: func() runtime.Object { return &corev1.ReplicationController{} }, newList: func() runtime.Object { return &corev1.ReplicationControllerList{} },
			status: true, generation: true, scale: labelSetScale, fields: []string{"status.replicas"}},
		{group: "", version: "v1", name: "endpoints", createOnUpdate: true, kind: "Endpoints", namespaced: true, short: []string{"ep"},
			newObj: func() runtime.Object { return &corev1.Endpoints{} }, newList: func() runtime.Object { return &corev1.EndpointsList{} }},
		{group: "", version: "v1", name: "configmaps", kind: "ConfigMap", namespaced: true, short: []string{"cm"},
			newObj: func() runtime.Object { return &corev1.ConfigMap{} }, newList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		{group: "", version: "v1", name: "secrets", kind: "Secret", namespaced: true,
			newObj: func() runtime.Object { return &corev1.Secret{} }, newList: func() runtime.Object { return &corev1.SecretList{} },
			fields: []string{"type"}},
		{group: "", version: "v1", name: "serviceaccounts", kind: "ServiceAccount", namespaced: true, short: []string{"sa"},
			newObj: func() runtime.Object { return &corev1.ServiceAccount{} }, newList: func() runtime.Object { return &corev1.ServiceAccountList{} }},
		{group: "", version: "v1", name: "events", kind: "Event", namespaced: true, short: []string{"ev"}, ttl: eventTTL,
			newObj: func() runtime.Object { return &corev1.Event{} }, newList: func() runtime.Object { return &corev1.EventList{} },
			fields:      []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
			fieldLabels: map[string]FieldLabel{"source": {Path: "source.component", Else: "reportingComponent"}}},
		{group: "", version: "v1", name: "resourcequotas", kind: "ResourceQuota", namespaced: true, short: []string{"quota"},
			newObj: func() runtime.Object { return &corev1.ResourceQuota{} }, newList: func() runtime.Object { return &corev1.ResourceQuotaList{} }, status: true},
		{group: "", version: "v1", name: "limitranges", createOnUpdate: true, kind: "LimitRange", namespaced: true, short: []string{"limits"},
			newObj: func() runtime.Object { return &corev1.LimitRange{} }, newList: func() runtime.Object { return &corev1.LimitRangeList{} }},
		{group: "", version: "v1", name: "persistentvolumes", kind: "PersistentVolume", short: []string{"pv"},
			newObj: func() runtime.Object { return &corev1.PersistentVolume{} }, newList: func() runtime.Object { return &corev1.PersistentVolumeList{} },
			status: true},
		{group: "", version: "v1", name: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, short: []string{"pvc"},
			newObj: func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, newList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
			status: true},
		// apps/v1
		{group: "apps", version: "v1", name: "deployments", kind: "Deployment", namespaced: true, short: []string{"deploy"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.Deployment{} }, newList: func() runtime.Object { return &appsv1.DeploymentList{} },
			status: true, generation: true, scale: replicasScale, deploymentAnnotations: true},
		{group: "apps", version: "v1", name: "replicasets", kind: "ReplicaSet", namespaced: true, short: []string{"rs"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.ReplicaSet{} }, newList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			status: true, generation: true, scale: replicasScale, fields: []string{"status.replicas"}},
		{group: "apps", version: "v1", name: "statefulsets", kind: "StatefulSet", namespaced: true, short: []string{"sts"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.StatefulSet{} }, newList: func() runtime.Object { return &appsv1.StatefulSetList{} },
			status: true, generation: true, scale: replicasScale},
		{group: "apps", version: "v1", name: "daemonsets", kind: "DaemonSet", namespaced: true, short: []string{"ds"}, categories: all,
			newObj: func() runtime.Object { return &appsv1.DaemonSet{} }, newList: func() runtime.Object { return &appsv1.DaemonSetList{} },
			status: true, generation: true, onCreate: daemonSetOnCreate, onUpdate: daemonSetOnUpdate},
		{group: "apps", version: "v1", name: "controllerrevisions", kind: "ControllerRevision", namespaced: true,
			newObj: func() runtime.Object { return &appsv1.ControllerRevision{} }, newList: func() runtime.Object { return &appsv1.ControllerRevisionList{} }},
		// batch/v1
		{group: "batch", version: "v1", name: "jobs", kind: "Job", namespaced: true, categories: all,
			newObj: func() runtime.Object { return &batchv1.Job{} }, newList: func() runtime.Object { return &batchv1.JobList{} },
			status: true, generation: true, fields: []string{"status.successful"},
			fieldLabels: map[string]FieldLabel{"status.successful": {Path: "status.succeeded", Absent: "0"}}},
		{group: "batch", version: "v1", name: "cronjobs", kind: "CronJob", namespaced: true, short: []string{"cj"}, categories: all,
			newObj: func() runtime.Object { return &batchv1.CronJob{} }, newList: func() runtime.Object { return &batchv1.CronJobList{} },
			status: true, generation: true},
		// coordination.k8s.io/v1
		{group: "coordination.k8s.io", version: "v1", name: "leases", createOnUpdate: true, kind: "Lease", namespaced: true,
			newObj: func() runtime.Object { return &coordinationv1.Lease{} }, newList: func() runtime.Object { return &coordinationv1.LeaseList{} }},
		// discovery.k8s.io/v1
		{group: "discovery.k8s.io", version: "v1", name: "endpointslices", kind: "EndpointSlice", namespaced: true,
			newObj: func() runtime.Object { return &discoveryv1.EndpointSlice{} }, newList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			generation: true},
		// events.k8s.io/v1 shares storage with core events, as in Kubernetes.
		{group: "events.k8s.io", version: "v1", name: "events", kind: "Event", namespaced: true, short: []string{"ev"}, ttl: eventTTL,
			storagePrefix: EventsKeyPrefix, stored: eventsV1Stored,
			newObj: func() runtime.Object { return &eventsv1.Event{} }, newList: func() runtime.Object { return &eventsv1.EventList{} },
			fields: []string{"reason", "type", "reportingController", "regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
				"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath", "source"},
			fieldLabels: map[string]FieldLabel{"source": {Path: "deprecatedSource.component", Else: "reportingController"}}},
		// networking.k8s.io/v1: stored only; ingress controllers and network
		// plugins, add-ons in Kubernetes too, act on them. No categories, as
		// upstream's storage (pkg/registry/networking/*/storage) gives none.
		{group: "networking.k8s.io", version: "v1", name: "ingresses", kind: "Ingress", namespaced: true, short: []string{"ing"},
			newObj: func() runtime.Object { return &networkingv1.Ingress{} }, newList: func() runtime.Object { return &networkingv1.IngressList{} },
			status: true, generation: true},
		{group: "networking.k8s.io", version: "v1", name: "ingressclasses", kind: "IngressClass",
			newObj: func() runtime.Object { return &networkingv1.IngressClass{} }, newList: func() runtime.Object { return &networkingv1.IngressClassList{} },
			generation: true},
		{group: "networking.k8s.io", version: "v1", name: "networkpolicies", kind: "NetworkPolicy", namespaced: true, short: []string{"netpol"},
			newObj: func() runtime.Object { return &networkingv1.NetworkPolicy{} }, newList: func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
			generation: true},
		// policy/v1
		{group: "policy", version: "v1", name: "poddisruptionbudgets", kind: "PodDisruptionBudget", namespaced: true, short: []string{"pdb"},
			newObj: func() runtime.Object { return &policyv1.PodDisruptionBudget{} }, newList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
			status: true, generation: true},
		// rbac.authorization.k8s.io/v1
		{group: "rbac.authorization.k8s.io", version: "v1", name: "roles", createOnUpdate: true, kind: "Role", namespaced: true, nameFunc: path.ValidatePathSegmentName,
			newObj: func() runtime.Object { return &rbacv1.Role{} }, newList: func() runtime.Object { return &rbacv1.RoleList{} }},
		{group: "rbac.authorization.k8s.io", version: "v1", name: "rolebindings", createOnUpdate: true, kind: "RoleBinding", namespaced: true, nameFunc: path.ValidatePathSegmentName,
			newObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, newList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},
		{group: "rbac.authorization.k8s.io", version: "v1", name: "clusterroles", createOnUpdate: true, kind: "ClusterRole", nameFunc: path.ValidatePathSegmentName,
			newObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{group: "rbac.authorization.k8s.io", version: "v1", name: "clusterrolebindings", createOnUpdate: true, kind: "ClusterRoleBinding", nameFunc: path.ValidatePathSegmentName,
			newObj: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		// scheduling.k8s.io/v1
		{group: "scheduling.k8s.io", version: "v1", name: "priorityclasses", kind: "PriorityClass", short: []string{"pc"},
			newObj: func() runtime.Object { return &schedulingv1.PriorityClass{} }, newList: func() runtime.Object { return &schedulingv1.PriorityClassList{} }},
		// storage.k8s.io/v1
		{group: "storage.k8s.io", version: "v1", name: "storageclasses", kind: "StorageClass", short: []string{"sc"},
			newObj: func() runtime.Object { return &storagev1.StorageClass{} }, newList: func() runtime.Object { return &storagev1.StorageClassList{} }},
	}
}

// Builtins returns the built-in resources (everything but custom resources
// and CRDs themselves), wired to the given defaulting/validation hooks and
// table converter (nil for the generic one).
func Builtins(h Hooks, table TableConvertor) []*Resource {
	var out []*Resource
	for _, s := range builtinSpecs() {
		out = append(out, &Resource{
			Group: s.group, Version: s.version, Name: s.name, Kind: s.kind,
			Namespaced: s.namespaced, ShortNames: s.short, Categories: s.categories,
			New: s.newObj, NewList: s.newList,
			Strategy: &DefaultStrategy{
				Namespaced: s.namespaced, NameFunc: s.nameFunc, HasStatus: s.status,
				CreateWithStatus: s.createWithStatus, Generation: s.generation,
				AnnotationsMoveGeneration: s.deploymentAnnotations, StatusSetsAnnotations: s.deploymentAnnotations,
				Hooks: h, OnCreate: s.onCreate,
				OnAdmitted: s.onAdmitted, OnUpdate: s.onUpdate,
			},
			Subresources: Subresources{
				Status: s.status, Scale: s.scale, Finalize: s.finalize,
				Binding: s.binding, Eviction: s.evict,
			},
			SelectableFields: s.fields,
			FieldLabels:      s.fieldLabels,
			CreateOnUpdate:   s.createOnUpdate,
			TTL:              s.ttl,
			StoragePrefix:    s.storagePrefix,
			Stored:           s.stored,
			Table:            table,
		})
	}
	return out
}

// namespaceOnCreate: a new namespace is Active and carries the "kubernetes"
// finalizer the namespace controller removes after emptying it.
func namespaceOnCreate(obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	ns.Status.Phase = corev1.NamespaceActive
	has := false
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			has = true
		}
	}
	if !has {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// podOnCreate: a new pod is Pending until the node agent reports otherwise;
// one with scheduling gates says so in PodScheduled, as Kubernetes' pod
// strategy does (kubectl get pods shows SchedulingGated).
func podOnCreate(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
	}
}

// mergeLabelKeys turns each pod (anti-)affinity term's matchLabelKeys into
// "key In (the pod's value)" and its mismatchLabelKeys into "key NotIn (the
// pod's value)" requirements of the term's label selector, once, when the
// pod is created, as kube-apiserver does since MatchLabelKeysInPodAffinity
// (GA in 1.33): the stored pod shows the selector the scheduler uses, and a
// later change of the pod's labels does not move it. A key the pod has no
// label for adds nothing; a term without a selector (which selects no pod)
// is left alone. The key lists stay as they were.
func mergeLabelKeys(pod *corev1.Pod) {
	a := pod.Spec.Affinity
	if a == nil {
		return
	}
	merge := func(term *corev1.PodAffinityTerm) {
		if term.LabelSelector == nil {
			return
		}
		add := func(keys []string, op metav1.LabelSelectorOperator) {
			for _, key := range keys {
				if v, ok := pod.Labels[key]; ok {
					term.LabelSelector.MatchExpressions = append(term.LabelSelector.MatchExpressions,
						metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: []string{v}})
				}
			}
		}
		add(term.MatchLabelKeys, metav1.LabelSelectorOpIn)
		add(term.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	each := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
		for i := range preferred {
			merge(&preferred[i].PodAffinityTerm)
		}
		for i := range required {
			merge(&required[i])
		}
	}
	if pa := a.PodAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
}

// podOnAdmitted records a new pod's QoS class, from its resources as
// admission left them (LimitRange defaults included), and merges its pod
// (anti-)affinity terms' matchLabelKeys and mismatchLabelKeys into their
// label selectors (mergeLabelKeys) with the labels admission left, after
// managedFields were recorded, as kube-apiserver's PrepareForCreate does.
func podOnAdmitted(obj runtime.Object) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Status.QOSClass = qos.Class(pod)
		mergeLabelKeys(pod)
	}
}

// A DaemonSet's template generation: 1 when created, one more each time the
// template changes, kept in the annotation apps/v1 has carried it in since
// the field left the API. The DaemonSet controller labels pods with it
// (pod-template-generation), as Kubernetes' does; clients cannot set it.
func daemonSetOnCreate(obj runtime.Object) {
	if ds, ok := obj.(*appsv1.DaemonSet); ok {
		setTemplateGeneration(ds, 1)
	}
}

func daemonSetOnUpdate(obj, old runtime.Object) {
	ds, ok1 := obj.(*appsv1.DaemonSet)
	oldDS, ok2 := old.(*appsv1.DaemonSet)
	if !ok1 || !ok2 {
		return
	}
	gen, err := strconv.ParseInt(oldDS.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		gen = 0 // stored before skiff kept it: counting starts now
	}
	if !apiequality.Semantic.DeepEqual(ds.Spec.Template, oldDS.Spec.Template) {
		gen++
	}
	setTemplateGeneration(ds, gen)
}

func setTemplateGeneration(ds *appsv1.DaemonSet, gen int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
}
