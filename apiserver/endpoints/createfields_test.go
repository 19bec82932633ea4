package endpoints

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/utils/ptr"
)

// shapeCorpus is objects of the kinds created most, and of varied shape.
func shapeCorpus() []runtime.Object {
	now := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	pod := fullPod()
	pod.GenerateName = "web-"
	pod.CreationTimestamp = now
	pod.UID = "0b7c"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d", UID: "1e2f", Controller: ptr.To(true)}}
	pod.Spec.NodeName = "node-1"
	pod.Spec.Priority = ptr.To[int32](0)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	kubeletEvent := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-1.187a", Namespace: "default", CreationTimestamp: now, UID: "9a"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "0b7c", APIVersion: "v1", FieldPath: "spec.containers{web}"},
		Reason:         "Started", Message: "Started container web", Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Type: corev1.EventTypeNormal,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
	schedulerEvent := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1.187b", Namespace: "default"},
		EventTime:  metav1.NewMicroTime(now.Time), ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-host",
		Action: "Binding", Reason: "Scheduled", Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "0b7c", APIVersion: "v1"},
		Note: "Successfully assigned default/web-1 to node-1", Type: corev1.EventTypeNormal,
		Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Time)},
	}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: fullPod().Spec}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Annotations: map[string]string{"note": "x"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.10",
			ClusterIPs: []string{"10.43.0.10"}, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}},
		Spec: corev1.NodeSpec{PodCIDR: "10.42.1.0/24", PodCIDRs: []string{"10.42.1.0/24"}, Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", Architecture: "amd64"},
		}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"a": "1", "b": ""},
		BinaryData: map[string][]byte{"bin": {1, 2}}, Immutable: ptr.To(false)}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(now.Time))}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s-abc", Namespace: "default", Labels: map[string]string{"kubernetes.io/service-name": "s"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.42.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: fullPod().Spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}
	return []runtime.Object{pod, kubeletEvent, schedulerEvent, deploy, svc, node, cm, secret, lease, slice, sts}
}

// varyScalars changes every scalar outside lists to another value of the
// same zeroness (what createShape leaves out of the shape).
func varyScalars(v reflect.Value, rnd *rand.Rand) {
	switch v.Type() {
	case reflect.TypeFor[metav1.Time]():
		if !v.IsZero() {
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(rnd.Int64N(1<<31)+1, 0))))
		}
		return
	case reflect.TypeFor[metav1.MicroTime]():
		if !v.IsZero() {
			v.Set(reflect.ValueOf(metav1.NewMicroTime(time.Unix(rnd.Int64N(1<<31)+1, 1000))))
		}
		return
	case reflect.TypeFor[resource.Quantity]():
		if !v.IsZero() {
			v.Set(reflect.ValueOf(*resource.NewQuantity(rnd.Int64N(1000)+1, resource.DecimalSI)))
		}
		return
	case reflect.TypeFor[intstr.IntOrString]():
		if !v.IsZero() {
			if v.Interface().(intstr.IntOrString).Type == intstr.Int {
				v.Set(reflect.ValueOf(intstr.FromInt32(rnd.Int32N(1000) + 1)))
			} else {
				v.Set(reflect.ValueOf(intstr.FromString("p" + string(rune('a'+rnd.IntN(26))))))
			}
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			varyScalars(v.Elem(), rnd)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				varyScalars(v.Field(i), rnd)
			}
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Slice { // []byte values: a scalar each
			for _, k := range v.MapKeys() {
				if v.MapIndex(k).Len() > 0 {
					v.SetMapIndex(k, reflect.ValueOf([]byte{byte(rnd.IntN(255) + 1)}).Convert(v.Type().Elem()))
				}
			}
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			varyScalars(e, rnd)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.Len() > 0 {
			v.SetString(v.String() + "-" + string(rune('a'+rnd.IntN(26))))
		}
	case reflect.Bool: // true is the only value that is not zero
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() != 0 {
			v.SetInt(rnd.Int64N(100) + 1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() != 0 {
			v.SetUint(rnd.Uint64N(100) + 1)
		}
	case reflect.Slice, reflect.Array: // lists keep their values
	}
}

func shapeOf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	b, ok := createShape(nil, obj)
	if !ok {
		t.Fatalf("%T has no shape", obj)
	}
	return b
}

func gvkOf(t *testing.T, obj runtime.Object) schema.GroupVersionKind {
	t.Helper()
	kinds, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	return kinds[0]
}

// createTracked is what Kubernetes' field manager records for the create
// of obj by manager.
func createTracked(t *testing.T, exact *managedfields.FieldManager, gvk schema.GroupVersionKind, obj runtime.Object, manager string) runtime.Object {
	t.Helper()
	empty, err := Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	empty.GetObjectKind().SetGroupVersionKind(gvk)
	o := obj.DeepCopyObject()
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return exact.UpdateNoErrors(empty, o, manager)
}

// TestCreateShapeDeterminesManagedFields checks the premise of the cache:
// objects that differ only where createShape does not look (scalars outside
// lists, keeping their zeroness) get the same managedFields from
// Kubernetes' own field manager; and changes it does look at change the
// shape.
func TestCreateShapeDeterminesManagedFields(t *testing.T) {
	builtin := applyconfigurations.NewTypeConverter(Scheme)
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, obj := range shapeCorpus() {
		gvk := gvkOf(t, obj)
		exact, err := managedfields.NewDefaultFieldManager(builtin, Scheme, Scheme, Scheme, gvk, gvk.GroupVersion(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := accessor(withoutTimes(createTracked(t, exact, gvk, obj, "m"))).GetManagedFields()
		if len(want) != 1 {
			t.Fatalf("%s: %d managedFields entries for a create, want 1", gvk.Kind, len(want))
		}
		shape := shapeOf(t, obj)
		for i := range 20 {
			variant := obj.DeepCopyObject()
			varyScalars(reflect.ValueOf(variant).Elem(), rnd)
			if i == 0 && apiequality.Semantic.DeepEqual(variant, obj) {
				t.Fatalf("%s: varyScalars changed nothing", gvk.Kind)
			}
			if got := shapeOf(t, variant); !bytes.Equal(got, shape) {
				t.Fatalf("%s variant %d: shape changed by scalars outside lists", gvk.Kind, i)
			}
			got := accessor(withoutTimes(createTracked(t, exact, gvk, variant, "m"))).GetManagedFields()
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Fatalf("%s variant %d: managedFields differ for one shape:\n%s\n%s", gvk.Kind, i, got[0].FieldsV1.Raw, want[0].FieldsV1.Raw)
			}
		}
	}

	// What the field set depends on changes the shape.
	base := fullPod()
	for name, change := range map[string]func(*corev1.Pod){
		"label added":          func(p *corev1.Pod) { p.Labels["new"] = "x" },
		"label renamed":        func(p *corev1.Pod) { delete(p.Labels, "tier"); p.Labels["team"] = "fe" },
		"field emptied":        func(p *corev1.Pod) { p.Spec.Affinity = nil },
		"scalar zeroed":        func(p *corev1.Pod) { p.Namespace = "" },
		"list key changed":     func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8081 },
		"set value changed":    func(p *corev1.Pod) { p.Finalizers[0] = "example.com/g" },
		"list element dropped": func(p *corev1.Pod) { p.Spec.Volumes = p.Spec.Volumes[:0] },
		"quantity key": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("1Mi")
		},
	} {
		p := base.DeepCopy()
		change(p)
		if bytes.Equal(shapeOf(t, p), shapeOf(t, base)) {
			t.Errorf("%s: shape unchanged", name)
		}
	}
}

// TestCreateFieldsCacheMatchesFieldManager sends creates of many shapes,
// repeated and interleaved, through the cache and compares every result
// with what Kubernetes' field manager records.
func TestCreateFieldsCacheMatchesFieldManager(t *testing.T) {
	builtin := applyconfigurations.NewTypeConverter(Scheme)
	fm := newFieldManagers()
	cache := newCreateFieldsCache()
	rnd := rand.New(rand.NewPCG(3, 4))
	corpus := shapeCorpus()
	relabeled := fullPod()
	relabeled.Labels["extra"] = "1"
	renamed := fullPod()
	delete(renamed.Labels, "tier")
	renamed.Labels["team"] = "fe" // as many labels as fullPod's
	corpus = append(corpus, relabeled, renamed, fullPod())
	var hits int
	for i := range 300 {
		obj := corpus[rnd.IntN(len(corpus))].DeepCopyObject()
		if rnd.IntN(2) == 0 {
			varyScalars(reflect.ValueOf(obj).Elem(), rnd)
		}
		gvk := gvkOf(t, obj)
		manager := []string{"kubelet", "kubectl"}[rnd.IntN(2)]
		exact, err := managedfields.NewDefaultFieldManager(builtin, Scheme, Scheme, Scheme, gvk, gvk.GroupVersion(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := createTracked(t, exact, gvk, obj, manager)

		in := obj.DeepCopyObject()
		in.GetObjectKind().SetGroupVersionKind(gvk)
		key, ok := createFieldsKey(nil, gvk, "", manager, in)
		if !ok {
			t.Fatalf("%s has no shape", gvk.Kind)
		}
		cache.mu.Lock()
		_, cached := cache.entries[string(key)]
		cache.mu.Unlock()
		if cached {
			hits++
		}
		empty, _ := Scheme.New(gvk)
		empty.GetObjectKind().SetGroupVersionKind(gvk)
		exactFM, fastFM := endpointFieldManagers(t, fm, gvk)
		before := time.Now().UTC().Truncate(time.Second)
		got := cache.track(exactFM, fastFM, gvk, "", manager, in, func() runtime.Object { return empty })
		if !apiequality.Semantic.DeepEqual(withoutTimes(got), withoutTimes(want)) {
			t.Fatalf("create %d (%s by %s, cached %v): managedFields differ\ncache: %+v\nfield manager: %+v", i, gvk.Kind, manager, cached,
				accessor(got).GetManagedFields(), accessor(want).GetManagedFields())
		}
		for _, e := range accessor(got).GetManagedFields() {
			if e.Time == nil || e.Time.Before(&metav1.Time{Time: before}) {
				t.Fatalf("create %d (cached %v): entry time %v is not the create's", i, cached, e.Time)
			}
		}
		if cached {
			// A later hit must not see this object's entries changed.
			accessor(got).GetManagedFields()[0].Manager = "changed"
		}
		// Nor the time of the create that filled the cache.
		cache.mu.Lock()
		for _, entries := range cache.entries {
			for i := range entries {
				entries[i].Time = &metav1.Time{Time: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
			}
		}
		cache.mu.Unlock()
	}
	if hits < 200 {
		t.Fatalf("%d of 300 creates of %d shapes hit the cache", hits, len(corpus))
	}
}

// endpointFieldManagers builds the validating and unvalidated field
// managers the endpoints use for gvk.
func endpointFieldManagers(t *testing.T, f *fieldManagers, gvk schema.GroupVersionKind) (exact, fast *managedfields.FieldManager) {
	t.Helper()
	exact, err := managedfields.NewDefaultFieldManager(f.builtin, unsafeConvertor, Scheme, Scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	fast, err = managedfields.NewDefaultFieldManager(f.builtinNoValidation, unsafeConvertor, Scheme, Scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return exact, fast
}

// An object whose shape is too long to keep (long lists) is tracked by the
// field manager and not cached.
func TestCreateFieldsCacheSkipsLongShapes(t *testing.T) {
	builtin := applyconfigurations.NewTypeConverter(Scheme)
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"}}
	subset := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}
	for i := range 1000 {
		subset.Addresses = append(subset.Addresses, corev1.EndpointAddress{IP: fmt.Sprintf("10.42.%d.%d", i/250, i%250+1)})
	}
	ep.Subsets = []corev1.EndpointSubset{subset}
	gvk := gvkOf(t, ep)
	ep.GetObjectKind().SetGroupVersionKind(gvk)
	if key, _ := createFieldsKey(nil, gvk, "", "m", ep); len(key) <= maxShapeKey {
		t.Fatalf("test object's shape is %d bytes, not over %d", len(key), maxShapeKey)
	}
	exact, err := managedfields.NewDefaultFieldManager(builtin, Scheme, Scheme, Scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := createTracked(t, exact, gvk, ep, "m")
	exactFM, fastFM := endpointFieldManagers(t, newFieldManagers(), gvk)
	cache := newCreateFieldsCache()
	got := cache.track(exactFM, fastFM, gvk, "", "m", ep.DeepCopy(), func() runtime.Object {
		o, _ := Scheme.New(gvk)
		o.GetObjectKind().SetGroupVersionKind(gvk)
		return o
	})
	if !apiequality.Semantic.DeepEqual(withoutTimes(got), withoutTimes(want)) {
		t.Fatal("managedFields differ from the field manager's")
	}
	if len(cache.entries) != 0 {
		t.Fatalf("%d shapes cached, want none", len(cache.entries))
	}
}
