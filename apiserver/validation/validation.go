package validation

import (
	"errors"
	"reflect"
	"regexp"
	"strings"

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
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NameFunc validates an object name; prefix is true when the name is a
// generateName prefix, which may end in a dash. It returns one message per
// problem, empty when the name is valid.
type NameFunc = apivalidation.ValidateNameFunc

// ValidateName returns the name rule for a kind: DNS-1123 labels for
// namespaces, DNS-1035 labels for services (a service name becomes a DNS name
// and an environment variable prefix, so it must start with a letter), path
// segments for RBAC objects, and DNS-1123 subdomains for everything else,
// custom resources included.
func ValidateName(kind string) NameFunc {
	switch kind {
	case "Namespace":
		return apivalidation.NameIsDNSLabel
	case "Service":
		return apivalidation.NameIsDNS1035Label
	case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return path.ValidatePathSegmentName
	default:
		return apivalidation.NameIsDNSSubdomain
	}
}

// Validate checks an object being created. It returns nil for types it does
// not know (custom resources are validated against their CRD's schema
// elsewhere).
func Validate(obj runtime.Object) field.ErrorList {
	r, ok := rulesFor(obj)
	if !ok {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := apivalidation.ValidateObjectMetaAccessor(m, r.namespaced, ValidateName(r.kind), field.NewPath("metadata"))
	errs = append(errs, templateDeletionCost(obj, nil)...)
	return append(errs, r.create(obj)...)
}

// podTemplate returns the template a workload makes its pods from, and its
// path; nil for other kinds.
func podTemplate(obj runtime.Object) (*corev1.PodTemplateSpec, *field.Path) {
	tpl := field.NewPath("spec", "template")
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template, tpl
	case *appsv1.ReplicaSet:
		return &o.Spec.Template, tpl
	case *appsv1.DaemonSet:
		return &o.Spec.Template, tpl
	case *appsv1.StatefulSet:
		return &o.Spec.Template, tpl
	case *batchv1.Job:
		return &o.Spec.Template, tpl
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template, field.NewPath("spec", "jobTemplate", "spec", "template")
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			return o.Spec.Template, tpl
		}
	}
	return nil, nil
}

// templateDeletionCost checks a workload template's pod-deletion-cost, as
// Kubernetes does, so a bad value is refused where it is written rather than
// on every pod the controller then fails to create. old, on update, lets a
// template stored with a bad value keep it.
func templateDeletionCost(obj, old runtime.Object) field.ErrorList {
	t, p := podTemplate(obj)
	if t == nil {
		return nil
	}
	var oldAnnotations map[string]string
	if old != nil {
		if ot, _ := podTemplate(old); ot != nil {
			oldAnnotations = ot.Annotations
		}
	}
	return validatePodDeletionCost(t.Annotations, oldAnnotations, p.Child("metadata", "annotations"))
}

// podSpecOf returns the pod spec an object carries, a pod's own or a
// workload template's, and its path; nil for other kinds.
func podSpecOf(obj runtime.Object) (*corev1.PodSpec, *field.Path) {
	if pod, ok := obj.(*corev1.Pod); ok {
		return &pod.Spec, field.NewPath("spec")
	}
	if t, p := podTemplate(obj); t != nil {
		return &t.Spec, p.Child("spec")
	}
	return nil, nil
}

// keepStoredViolations drops from errs those errors of newObj's pod spec,
// under the rules in storedRules, that oldObj, as stored, already had: skiff
// stored objects before it checked those rules, and such an object keeps
// what it has through updates, as Kubernetes' PodValidationOptions let a
// pod or template stored before a rule tightened keep it. Otherwise such a
// pod (whose spec cannot change) could no longer have its labels or
// finalizers changed (a Job's pod would stay Terminating on its tracking
// finalizer), and a workload's controller could not write it. A violation
// the update adds is still refused.
//
// A violation is known by what it is about, not by where it sits
// (storedViolation), so an update that only reorders containers, mounts,
// spread constraints or affinity terms keeps them. Each is counted: the
// update may not repeat one elsewhere either. Kubernetes'
// PodValidationOptions are coarser (one violation of a rule anywhere in
// the old spec waives the rule for the whole new one), which would let an
// update add violations of a rule the object already broke once.
func keepStoredViolations(errs field.ErrorList, newObj, oldObj runtime.Object) field.ErrorList {
	oldSpec, _ := podSpecOf(oldObj)
	newSpec, p := podSpecOf(newObj)
	if oldSpec == nil || newSpec == nil || len(errs) == 0 {
		return errs
	}
	stored := make(map[string]int)
	for _, e := range storedRuleErrors(oldSpec, p) {
		stored[storedViolation(e, oldSpec, p)]++
	}
	if len(stored) == 0 {
		return errs
	}
	// The new spec's violations that are stored ones, by their text in errs.
	carried := make(map[string]int)
	for _, e := range storedRuleErrors(newSpec, p) {
		if id := storedViolation(e, newSpec, p); stored[id] > 0 {
			stored[id]--
			carried[e.Error()]++
		}
	}
	kept := errs[:0:0]
	for _, e := range errs {
		if text := e.Error(); carried[text] > 0 {
			carried[text]--
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// storedRuleErrors is what the rules in storedRules find in s (at p).
func storedRuleErrors(s *corev1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, rule := range storedRules {
		errs = append(errs, rule(s, p)...)
	}
	return errs
}

// listIndex is a list index in a field path.
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// storedViolation is what keepStoredViolations knows a violation e of
// spec s (at p) by: its text, with a container's index in the path
// replaced by the container's name (unique in a spec, and kept through a
// reorder, so a violation cannot pass from one container to another) and
// every other list index dropped (spread constraints, affinity terms and
// label keys have no name; the count of like violations stands in for
// their place). A mount's violation has no index to drop: its path names
// the container's volumeMounts, as Kubernetes reports it.
func storedViolation(e *field.Error, s *corev1.PodSpec, p *field.Path) string {
	head, rest := "", e.Field
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i, c := range list.containers {
			r, ok := strings.CutPrefix(e.Field, p.Child(list.name).Index(i).String())
			if ok && (r == "" || r[0] == '.') {
				head, rest = p.Child(list.name).Key(c.Name).String(), r
			}
		}
	}
	id := *e
	id.Field = head + listIndex.ReplaceAllString(rest, "[*]")
	return id.Error()
}

// storedRules are the pod spec rules skiff added after it had stored
// objects that may break them (keepStoredViolations): matchLabelKeys and
// mismatchLabelKeys, hostUsers and procMount, recursiveReadOnly,
// runtimeClassName.
var storedRules = []func(*corev1.PodSpec, *field.Path) field.ErrorList{
	validatePodSpecLabelKeys,
	validateRuntimeClassName,
	validateHostUsers,
	validateSpecProcMounts,
	validateSpecRecursiveReadOnly,
}

// ValidateUpdate checks newObj as a replacement for oldObj: the metadata
// update rules (name, namespace, uid and creationTimestamp are immutable,
// labels and annotations well formed), the same content rules as Validate,
// and each kind's immutable fields. For types it does not know (custom
// resources, unstructured objects) only the metadata rules apply.
//
// An update without metadata.resourceVersion is treated as unconditional:
// concurrency is the caller's business, so the "must be specified for an
// update" rule is checked against the stored version instead.
func ValidateUpdate(newObj, oldObj runtime.Object) field.ErrorList {
	if newObj == nil || oldObj == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("validation: nil object in update"))}
	}
	if reflect.TypeOf(newObj) != reflect.TypeOf(oldObj) {
		return field.ErrorList{field.InternalError(nil, errors.New("validation: update changes the object's type"))}
	}
	newMeta, err := meta.Accessor(newObj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	oldMeta, err := meta.Accessor(oldObj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := metaUpdate(newMeta, oldMeta)
	r, ok := rulesFor(newObj)
	if !ok {
		// Custom resources: the metadata rules apply to every kind.
		return errs
	}
	errs = append(errs, keepStoredViolations(r.spec(newObj), newObj, oldObj)...)
	errs = append(errs, templateDeletionCost(newObj, oldObj)...)
	if r.update != nil {
		errs = append(errs, r.update(newObj, oldObj)...)
	}
	return errs
}

// rules is what one kind contributes: its name rule, its scope, the checks of
// everything outside metadata, and the checks that compare with the stored
// object.
type rules struct {
	kind       string
	namespaced bool
	spec       func(obj runtime.Object) field.ErrorList
	update     func(newObj, oldObj runtime.Object) field.ErrorList
	// createOnly holds rules a new object must meet but a stored one may
	// have outgrown (a pod gains ephemeral containers after creation).
	createOnly func(obj runtime.Object) field.ErrorList
	// statusUpdate, when set, is all a status subresource update checks:
	// such an update keeps the stored spec and metadata (the status
	// strategy copies them), which passed their rules when written. Kinds
	// without it run spec and update on a status update too (some of them
	// look at the status: a Node's capacity, a bound claim).
	statusUpdate func(newObj, oldObj runtime.Object) field.ErrorList
}

// create runs the content checks for a new object.
func (r rules) create(obj runtime.Object) field.ErrorList {
	errs := r.spec(obj)
	if r.createOnly != nil {
		errs = append(errs, r.createOnly(obj)...)
	}
	return errs
}

// kindRules adapts typed check functions to rules.
func kindRules[T runtime.Object](kind string, namespaced bool, spec func(T) field.ErrorList, update func(newObj, oldObj T) field.ErrorList) rules {
	r := rules{
		kind:       kind,
		namespaced: namespaced,
		spec:       func(obj runtime.Object) field.ErrorList { return spec(obj.(T)) },
	}
	if update != nil {
		r.update = func(n, o runtime.Object) field.ErrorList { return update(n.(T), o.(T)) }
	}
	return r
}

func noSpec[T runtime.Object](T) field.ErrorList { return nil }

// statusRules adapts a kind's status-update rules to rules.statusUpdate.
func statusRules[T runtime.Object](f func(n, o T) field.ErrorList) func(n, o runtime.Object) field.ErrorList {
	return func(n, o runtime.Object) field.ErrorList { return f(n.(T), o.(T)) }
}

func rulesFor(obj runtime.Object) (rules, bool) {
	switch obj.(type) {
	// core/v1
	case *corev1.Pod:
		r := kindRules("Pod", true, validatePod, validatePodUpdate)
		r.createOnly = func(obj runtime.Object) field.ErrorList { return validatePodCreate(obj.(*corev1.Pod)) }
		r.statusUpdate = statusRules(validatePodStatusUpdate)
		return r, true
	case *corev1.Service:
		r := kindRules("Service", true, validateService, validateServiceUpdate)
		r.createOnly = func(obj runtime.Object) field.ErrorList {
			svc := obj.(*corev1.Service)
			errs := append(validateServiceRouting(svc, true, true), validateLoadBalancerSourceRanges(svc, nil)...)
			errs = append(errs, validateLoadBalancerFields(svc, nil)...)
			errs = append(errs, validateExternalNameFamilies(svc, nil)...)
			return append(errs, validateExternalIPsNonSpecial(svc, nil)...)
		}
		return r, true
	case *corev1.ConfigMap:
		return kindRules("ConfigMap", true, validateConfigMap, validateConfigMapUpdate), true
	case *corev1.Secret:
		return kindRules("Secret", true, validateSecret, validateSecretUpdate), true
	case *corev1.Namespace:
		return kindRules("Namespace", false, validateNamespace, nil), true
	case *corev1.Node:
		return kindRules("Node", false, validateNode, validateNodeUpdate), true
	case *corev1.ServiceAccount:
		return kindRules("ServiceAccount", true, noSpec[*corev1.ServiceAccount], nil), true
	case *corev1.Endpoints:
		return kindRules("Endpoints", true, validateEndpoints, nil), true
	case *corev1.Event:
		return kindRules("Event", true, validateCoreEvent, nil), true
	case *corev1.ResourceQuota:
		r := kindRules("ResourceQuota", true, validateResourceQuota, validateResourceQuotaUpdate)
		r.statusUpdate = statusRules(validateResourceQuotaStatusUpdate)
		return r, true
	case *corev1.ReplicationController:
		// No update rules: unlike apps/v1 selectors a ReplicationController's
		// may change, as in Kubernetes; the new spec is checked whole.
		r := kindRules("ReplicationController", true, validateReplicationController, nil)
		r.statusUpdate = statusRules(validateReplicationControllerStatusUpdate)
		return r, true
	case *corev1.LimitRange:
		return kindRules("LimitRange", true, validateLimitRange, nil), true
	case *corev1.PersistentVolume:
		return kindRules("PersistentVolume", false, validatePersistentVolume, validatePersistentVolumeUpdate), true
	case *corev1.PersistentVolumeClaim:
		return kindRules("PersistentVolumeClaim", true, validatePersistentVolumeClaim, validatePersistentVolumeClaimUpdate), true

	// apps/v1
	case *appsv1.Deployment:
		r := kindRules("Deployment", true, validateDeployment, validateDeploymentUpdate)
		r.statusUpdate = statusRules(validateDeploymentStatusUpdate)
		return r, true
	case *appsv1.ReplicaSet:
		r := kindRules("ReplicaSet", true, validateReplicaSet, validateReplicaSetUpdate)
		r.statusUpdate = statusRules(validateReplicaSetStatusUpdate)
		return r, true
	case *appsv1.DaemonSet:
		r := kindRules("DaemonSet", true, validateDaemonSet, validateDaemonSetUpdate)
		r.statusUpdate = statusRules(validateDaemonSetStatusUpdate)
		return r, true
	case *appsv1.StatefulSet:
		r := kindRules("StatefulSet", true, validateStatefulSet, validateStatefulSetUpdate)
		r.statusUpdate = statusRules(validateStatefulSetStatusUpdate)
		return r, true

	// batch/v1
	case *batchv1.Job:
		r := kindRules("Job", true, validateJob, validateJobUpdate)
		r.statusUpdate = statusRules(validateJobStatusUpdate)
		return r, true
	case *batchv1.CronJob:
		r := kindRules("CronJob", true, validateCronJob, validateCronJobUpdate)
		r.createOnly = func(obj runtime.Object) field.ErrorList { return validateCronJobCreate(obj.(*batchv1.CronJob)) }
		// As Kubernetes' cronJobStatusStrategy: the stored spec is not judged again.
		r.statusUpdate = func(_, _ runtime.Object) field.ErrorList { return nil }
		return r, true

	// other groups
	case *coordinationv1.Lease:
		return kindRules("Lease", true, validateLease, nil), true
	case *discoveryv1.EndpointSlice:
		return kindRules("EndpointSlice", true, validateEndpointSlice, validateEndpointSliceUpdate), true
	case *eventsv1.Event:
		return kindRules("Event", true, validateEventsEvent, nil), true
	case *networkingv1.Ingress:
		// Create and update check the spec each with their own options
		// (an update keeps what the stored object earned), so the spec
		// is not checked as a new one's on update.
		r := kindRules("Ingress", true, noSpec[*networkingv1.Ingress], validateIngressUpdate)
		r.createOnly = func(obj runtime.Object) field.ErrorList { return validateIngressCreate(obj.(*networkingv1.Ingress)) }
		r.statusUpdate = statusRules(validateIngressStatusUpdate)
		return r, true
	case *networkingv1.IngressClass:
		return kindRules("IngressClass", false, validateIngressClass, validateIngressClassUpdate), true
	case *networkingv1.NetworkPolicy:
		r := kindRules("NetworkPolicy", true, noSpec[*networkingv1.NetworkPolicy], validateNetworkPolicyUpdate)
		r.createOnly = func(obj runtime.Object) field.ErrorList {
			return validateNetworkPolicy(obj.(*networkingv1.NetworkPolicy))
		}
		return r, true
	case *policyv1.PodDisruptionBudget:
		r := kindRules("PodDisruptionBudget", true, validatePDB, nil)
		r.statusUpdate = statusRules(validatePDBStatusUpdate)
		return r, true
	case *rbacv1.Role:
		return kindRules("Role", true, validateRole, nil), true
	case *rbacv1.ClusterRole:
		return kindRules("ClusterRole", false, validateClusterRole, nil), true
	case *rbacv1.RoleBinding:
		return kindRules("RoleBinding", true, validateRoleBinding, validateRoleBindingUpdate), true
	case *rbacv1.ClusterRoleBinding:
		return kindRules("ClusterRoleBinding", false, validateClusterRoleBinding, validateClusterRoleBindingUpdate), true
	case *schedulingv1.PriorityClass:
		return kindRules("PriorityClass", false, validatePriorityClass, validatePriorityClassUpdate), true
	case *storagev1.StorageClass:
		return kindRules("StorageClass", false, validateStorageClass, validateStorageClassUpdate), true
	}
	return rules{}, false
}

// ValidateContent is Validate without the generic metadata checks (name
// format, namespace presence, labels, annotations), for a caller that runs
// those itself and would otherwise report each metadata problem twice.
// Kind-specific metadata rules (a CronJob's name length) are still checked.
func ValidateContent(obj runtime.Object) field.ErrorList {
	r, ok := rulesFor(obj)
	if !ok {
		return nil
	}
	return r.create(obj)
}

// ValidateContentUpdate is ValidateUpdate without the generic metadata update
// checks, for the same kind of caller as ValidateContent.
func ValidateContentUpdate(newObj, oldObj runtime.Object) field.ErrorList {
	if newObj == nil || oldObj == nil {
		return field.ErrorList{field.InternalError(nil, errors.New("validation: nil object in update"))}
	}
	if reflect.TypeOf(newObj) != reflect.TypeOf(oldObj) {
		return field.ErrorList{field.InternalError(nil, errors.New("validation: update changes the object's type"))}
	}
	r, ok := rulesFor(newObj)
	if !ok {
		return nil
	}
	errs := keepStoredViolations(r.spec(newObj), newObj, oldObj)
	if r.update != nil {
		errs = append(errs, r.update(newObj, oldObj)...)
	}
	return errs
}

// ValidateStatusUpdate is ValidateContentUpdate for an update through the
// status subresource, whose spec and metadata are the stored object's: a
// kind with rules for its status runs only those (a pod's spec is not
// checked again on each of its kubelet's writes, as in Kubernetes), any
// other kind the rules of any update.
func ValidateStatusUpdate(newObj, oldObj runtime.Object) field.ErrorList {
	r, ok := rulesFor(newObj)
	if !ok || r.statusUpdate == nil || reflect.TypeOf(newObj) != reflect.TypeOf(oldObj) {
		return ValidateContentUpdate(newObj, oldObj)
	}
	return r.statusUpdate(newObj, oldObj)
}
