package endpoints

import (
	"cmp"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// step is one write in a sequence: obj written by manager over the result
// of the previous step (the first over an empty object).
type step struct {
	manager string
	obj     runtime.Object
	// carry: the write carries the live object's managedFields, as a
	// client's PUT of an object it read does.
	carry bool
}

// TestUnvalidatedFieldTrackingMatchesValidating runs sequences of writes
// through the validating field manager alone (what Kubernetes does) and
// through trackUpdate (unvalidated first, validating on any error), and
// requires the same objects and managedFields from both, including for
// objects the schema validation refuses.
func TestUnvalidatedFieldTrackingMatchesValidating(t *testing.T) {
	builtin := applyconfigurations.NewTypeConverter(Scheme)
	fast := &unvalidatedConverter{exact: builtin}
	managers := func(t *testing.T, gvk schema.GroupVersionKind, sub string) (*managedfields.FieldManager, *managedfields.FieldManager) {
		t.Helper()
		e, err := managedfields.NewDefaultFieldManager(builtin, Scheme, Scheme, Scheme, gvk, gvk.GroupVersion(), sub, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := managedfields.NewDefaultFieldManager(fast, Scheme, Scheme, Scheme, gvk, gvk.GroupVersion(), sub, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e, f
	}
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	pod1 := fullPod()
	pod2 := fullPod()
	pod2.Labels["tier"] = "db"
	pod2.Spec.Containers[0].Image = "registry.example.com/web:2"
	pod2.Spec.Containers[0].Env = append(pod2.Spec.Containers[0].Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
	pod2.Spec.Containers[0].Ports = pod2.Spec.Containers[0].Ports[:1]
	podStatus := fullPod()
	podStatus.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, Image: "registry.example.com/web:1",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	podStatus2 := podStatus.DeepCopy()
	podStatus2.Status.Conditions[0].Status = corev1.ConditionFalse
	podStatus2.Status.ContainerStatuses[0].RestartCount = 1
	// Labels only: spec and status are the same (both pruned before the
	// comparison, see pruneUnchanged).
	podRelabeled := podStatus2.DeepCopy()
	podRelabeled.Labels["track"] = "canary"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "default"}, Secrets: []corev1.ObjectReference{{Name: "s1"}}}
	// secrets is keyed by name, which has no default: an element without
	// one is refused by the schema validation.
	saMissingKey := sa.DeepCopy()
	saMissingKey.Secrets = append(saMissingKey.Secrets, corev1.ObjectReference{Kind: "Secret"})
	saGVK := corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	// Every field changed (nothing to prune) and a key missing: the
	// unvalidated manager fails on the whole object.
	automount := false
	saAllChanged := saMissingKey.DeepCopy()
	saAllChanged.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	saAllChanged.AutomountServiceAccountToken = &automount
	duplicates := fullPod()
	duplicates.Spec.Containers[0].Env = append(duplicates.Spec.Containers[0].Env, corev1.EnvVar{Name: "MODE", Value: "again"})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0.1"}, {Type: corev1.NodeHostName, Address: "n1"}},
			Images:     []corev1.ContainerImage{{Names: []string{"a:1", "a@sha256:00"}, SizeBytes: 10}},
		}}
	node2 := node.DeepCopy()
	node2.Status.Conditions[0].Status = corev1.ConditionFalse
	node2.Status.Conditions = append(node2.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	svc2 := svc.DeepCopy()
	svc2.Spec.Ports[0].TargetPort = intstr.FromString("http")
	replicas := int32(3)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: fullPod().Spec}}}
	deploy2 := deploy.DeepCopy()
	replicas2 := int32(5)
	deploy2.Spec.Replicas = &replicas2

	cases := []struct {
		name  string
		gvk   schema.GroupVersionKind
		sub   string
		steps []step
		// fastFails: the unvalidated manager must fail on some step (the
		// fallback is what answers).
		fastFails bool
	}{
		{name: "pod create and update", gvk: podGVK, steps: []step{{"kubectl", pod1, false}, {"controller", pod2, false}, {"kubectl", pod1, false}}},
		{name: "pod status", gvk: podGVK, sub: "status", steps: []step{{"kubelet", pod1, false}, {"kubelet", podStatus, false}}},
		{name: "pod status changes", gvk: podGVK, sub: "status", steps: []step{{"kubelet", pod1, false}, {"kubelet", podStatus, false}, {"kubelet", podStatus2, false}, {"other", podStatus, false}}},
		{name: "pod labels only", gvk: podGVK, steps: []step{{"kubectl", podStatus2, false}, {"controller", podRelabeled, false}, {"kubectl", podStatus2, false}}},
		{name: "missing list key", gvk: saGVK, steps: []step{{"kubectl", sa, false}, {"controller", saMissingKey, false}, {"kubectl", sa, false}}, fastFails: true},
		{name: "missing list key, nothing pruned", gvk: saGVK, steps: []step{{"kubectl", sa, false}, {"controller", saAllChanged, true}, {"kubectl", sa, true}}, fastFails: true},
		{name: "duplicate list keys", gvk: podGVK, steps: []step{{"kubectl", pod1, false}, {"controller", duplicates, false}, {"kubectl", pod2, false}}},
		{name: "node status", gvk: corev1.SchemeGroupVersion.WithKind("Node"), sub: "status", steps: []step{{"kubelet", node, false}, {"kubelet", node2, false}, {"other", node, false}}},
		{name: "service", gvk: corev1.SchemeGroupVersion.WithKind("Service"), steps: []step{{"a", svc, false}, {"b", svc2, false}}},
		{name: "deployment", gvk: appsv1.SchemeGroupVersion.WithKind("Deployment"), steps: []step{{"a", deploy, false}, {"hpa", deploy2, false}, {"a", deploy, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exact, fastFM := managers(t, tc.gvk, tc.sub)
			newEmpty := func() runtime.Object {
				obj, err := Scheme.New(tc.gvk)
				if err != nil {
					t.Fatal(err)
				}
				obj.GetObjectKind().SetGroupVersionKind(tc.gvk)
				return obj
			}
			wantLive, gotLive := newEmpty(), newEmpty()
			fastFailed := false
			for i, s := range tc.steps {
				obj := func() runtime.Object {
					o := s.obj.DeepCopyObject()
					o.GetObjectKind().SetGroupVersionKind(tc.gvk)
					if s.carry {
						accessor(o).SetManagedFields(accessor(wantLive).GetManagedFields())
					}
					// As guaranteedUpdate does: the write carries the live
					// object's managedFields unless the client sent some.
					return o
				}
				want := exact.UpdateNoErrors(wantLive.DeepCopyObject(), obj(), s.manager)
				if _, err := fastFM.Update(gotLive.DeepCopyObject(), obj(), s.manager); err != nil {
					fastFailed = true
				}
				got := trackUpdate(exact, fastFM, gotLive.DeepCopyObject(), obj(), s.manager)
				if len(accessor(want).GetManagedFields()) == 0 {
					t.Fatalf("step %d: the validating manager recorded no managedFields", i)
				}
				if !apiequality.Semantic.DeepEqual(withoutTimes(want), withoutTimes(got)) {
					t.Fatalf("step %d (%s): objects differ\nvalidating: %+v\ntrackUpdate: %+v", i, s.manager,
						accessor(want).GetManagedFields(), accessor(got).GetManagedFields())
				}
				wantLive, gotLive = want, got
			}
			if fastFailed != tc.fastFails {
				t.Fatalf("unvalidated manager failed: %v, want %v", fastFailed, tc.fastFails)
			}
		})
	}
}

// TestUnvalidatedConverterCoversCommonKinds requires the kinds written most
// (pods, nodes, leases, events, deployments) to take the unvalidated path,
// and logs the built-in kinds that keep validation.
func TestUnvalidatedConverterCoversCommonKinds(t *testing.T) {
	c := &unvalidatedConverter{exact: applyconfigurations.NewTypeConverter(Scheme)}
	for _, gvk := range []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithKind("Node"),
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, corev1.SchemeGroupVersion.WithKind("Event"),
		{Group: "events.k8s.io", Version: "v1", Kind: "Event"}, appsv1.SchemeGroupVersion.WithKind("Deployment"),
		appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), {Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
	} {
		k := c.kind(gvk)
		if k == nil || !k.safe {
			t.Errorf("%s keeps schema validation (kind %+v)", gvk, k)
		}
	}
	var kept []string
	for gvk := range Scheme.AllKnownTypes() {
		if !builtinSchema[gvk.Group] || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		if k := c.kind(gvk); k != nil && !k.safe {
			kept = append(kept, gvk.String())
		}
	}
	t.Logf("built-in kinds that keep schema validation: %v", kept)
}

// withoutTimes drops the managedFields timestamps, which differ by when
// each path ran.
// withoutTimes is obj with its managedFields' times dropped and the entries
// in one order: the field managers order entries by the second they were
// written, so two runs straddling a second boundary order the same entries
// differently.
func withoutTimes(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	m := accessor(obj)
	mf := m.GetManagedFields()
	for i := range mf {
		mf[i].Time = nil
	}
	slices.SortStableFunc(mf, func(a, b metav1.ManagedFieldsEntry) int {
		return cmp.Or(cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Manager, b.Manager), cmp.Compare(a.Subresource, b.Subresource))
	})
	m.SetManagedFields(mf)
	return obj
}

func fullPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "web", "tier": "fe"},
			Annotations: map[string]string{"a": "b"}, Finalizers: []string{"example.com/f"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "FROM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes:     []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		},
	}
}

// TestAssociativeBelowAtomic checks the rule that keeps validation: a keyed
// list below an atomic list whose elements may omit their key.
func TestAssociativeBelowAtomic(t *testing.T) {
	parser, err := typed.NewParser(`types:
- name: root
  map:
    fields:
    - name: items
      type:
        list:
          elementType:
            namedType: item
          elementRelationship: atomic
- name: item
  map:
    fields:
    - name: refs
      type:
        list:
          elementType:
            namedType: ref
          elementRelationship: associative
          keys: [name]
- name: ref
  map:
    fields:
    - name: name
      type:
        scalar: string
`)
	if err != nil {
		t.Fatal(err)
	}
	type refOmit struct {
		Name string `json:"name,omitempty"`
	}
	type itemOmit struct {
		Refs []refOmit `json:"refs"`
	}
	type rootOmit struct {
		Items []itemOmit `json:"items"`
	}
	type refAlways struct {
		Name string `json:"name"`
	}
	type itemAlways struct {
		Refs []refAlways `json:"refs"`
	}
	type rootAlways struct {
		Items []itemAlways `json:"items"`
	}
	root := parser.Type("root")
	if !associativeBelowAtomic(&parser.Schema, root.TypeRef, reflect.TypeOf(rootOmit{}), false, map[atomicWalkKey]bool{}) {
		t.Error("a key that may be omitted below an atomic list was not found")
	}
	if associativeBelowAtomic(&parser.Schema, root.TypeRef, reflect.TypeOf(rootAlways{}), false, map[atomicWalkKey]bool{}) {
		t.Error("a key that is always encoded counted as possibly missing")
	}
}
