package endpoints

import (
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

func builtin(t *testing.T, group, name string) *registry.Resource {
	t.Helper()
	for _, r := range registry.Builtins(registry.Hooks{}, nil) {
		if r.Group == group && r.Name == name {
			return r
		}
	}
	t.Fatalf("no built-in resource %q in group %q", name, group)
	return nil
}

func mustEncode(t *testing.T, res *registry.Resource, obj runtime.Object) []byte {
	t.Helper()
	data, err := encodeStored(res, obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// seedAndCheck writes obj as the write path does (encoded, then seeded at
// a revision) and returns what the cache holds and checkSeeded's verdict.
func seedAndCheck(t *testing.T, res *registry.Resource, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	data := mustEncode(t, res, obj)
	cp := seedCopy(res, obj, data)
	if cp == nil {
		return nil, nil
	}
	kv := &storage.KeyValue{Key: res.Key("default", accessor(obj).GetName()), Value: data, ModRevision: 42}
	c := newEventCache()
	c.seed(res, kv, cp)
	return c.get(res, kv, kv.Value, kv.ModRevision).obj, checkSeeded(res, kv, cp)
}

// TestSeededObjectIsWhatTheStoreWouldGiveBack checks the object a write
// leaves for its watchers against a decoding of the stored value: equal
// where the write path's object survives JSON unchanged (the field
// manager's times to the nanosecond are cut to seconds in the copy), not
// seeded where it would not (invalid UTF-8, a kind stored in another
// form), and a difference the check must catch (a server-set time with
// nanoseconds) is caught.
func TestSeededObjectIsWhatTheStoreWouldGiveBack(t *testing.T) {
	pods := builtin(t, "", "pods")
	now := time.Now().UTC()    // with nanoseconds, as the field manager sets managedFields times
	whole := wholeSecondsNow() // as the server sets a condition's time
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: whole,
			Labels: map[string]string{}, // stored without it: empty and absent are the same
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", Time: &metav1.Time{Time: now}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{}}}`)}}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1")}}}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: whole}}},
	}
	got, err := seedAndCheck(t, pods, pod)
	if err != nil {
		t.Fatalf("a pod as the write path holds it: %v", err)
	}
	if got == nil || accessor(got).GetResourceVersion() != "42" || got.GetObjectKind().GroupVersionKind().Kind != "Pod" {
		t.Fatalf("the cache holds %v, want the seeded pod at resourceVersion 42 with its kind", got)
	}
	// Equal even to reflect.DeepEqual, which tells a time's zone apart:
	// pruneUnchanged compares live and new objects so.
	stored, err := decodeStored(pods, mustEncode(t, pods, pod), 42)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.(*corev1.Pod).Status, stored.(*corev1.Pod).Status) {
		t.Errorf("the seeded status is not reflect.DeepEqual to the stored one:\n%+v\n%+v", got.(*corev1.Pod).Status, stored.(*corev1.Pod).Status)
	}
	if !reflect.DeepEqual(accessor(got).GetManagedFields(), accessor(stored).GetManagedFields()) {
		t.Errorf("the seeded managedFields are not reflect.DeepEqual to the stored ones")
	}
	if mt := accessor(pod).GetManagedFields()[0].Time; mt.Time != now {
		t.Errorf("seeding changed the writer's own object (managedFields time %v, was %v)", mt.Time, now)
	}

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: now.Truncate(time.Microsecond)}}}
	if _, err := seedAndCheck(t, builtin(t, "coordination.k8s.io", "leases"), lease); err != nil {
		t.Errorf("a lease renewed to the microsecond, as clients send it: %v", err)
	}

	late := pod.DeepCopy()
	late.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now)
	if _, err := seedAndCheck(t, pods, late); err == nil || !strings.Contains(err.Error(), "not semantically equal") {
		t.Errorf("a condition time with nanoseconds, which storing cuts: check says %v, want a difference", err)
	}

	bad := pod.DeepCopy()
	bad.Annotations = map[string]string{"a": "\xff"}
	if got, _ := seedAndCheck(t, pods, bad); got != nil {
		t.Errorf("an object with a string that is not UTF-8 was seeded")
	}

	ev := builtin(t, "events.k8s.io", "events")
	if ev.Stored == nil {
		t.Fatal("events.k8s.io Events are expected to be stored as core Events")
	}
	if cp := seedCopy(ev, ev.New(), []byte("{}")); cp != nil {
		t.Errorf("an object stored in another form was seeded")
	}
}

// TestOnlyWatchedKindsAreSeeded checks that a write is seeded only while
// its resource has an open watch: a kind nobody watches would only push
// the states readers want out of the cache.
func TestOnlyWatchedKindsAreSeeded(t *testing.T) {
	h := &Handler{events: newEventCache()}
	pods, events := builtin(t, "", "pods"), builtin(t, "", "events")
	if events.Stored != nil {
		t.Fatal("core Events are expected to be stored as they are")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	if opts := h.seedOnCommit(pods, pod, mustEncode(t, pods, pod)); len(opts) != 0 {
		t.Errorf("a pod written with no pod watch open is seeded")
	}
	ended := h.events.watchStarted(pods)
	if opts := h.seedOnCommit(pods, pod, mustEncode(t, pods, pod)); len(opts) != 1 {
		t.Errorf("a pod written while pods are watched is not seeded")
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}}
	if opts := h.seedOnCommit(events, ev, mustEncode(t, events, ev)); len(opts) != 0 {
		t.Errorf("an Event is seeded while only pods are watched")
	}
	ended()
	if opts := h.seedOnCommit(pods, pod, mustEncode(t, pods, pod)); len(opts) != 0 {
		t.Errorf("a pod written after the last pod watch ended is seeded")
	}
}
