package admission_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// TestGlobalDefaultPriorityClassFollowsTheStore checks that a pod naming
// no PriorityClass gets the global default as the store holds it at that
// moment: one created, changed, outranked, deleted or demoted just before
// is seen by the next pod (admission keeps the decoded classes by key and
// revision).
func TestGlobalDefaultPriorityClassFollowsTheStore(t *testing.T) {
	st := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	chain := admission.New(st, nil)
	ctx := context.Background()
	putServiceAccount(t, st, "ns", "default")
	revs := map[string]int64{}
	put := func(name string, value int32, global bool) {
		t.Helper()
		data, _ := json.Marshal(&schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{Kind: "PriorityClass", APIVersion: "scheduling.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: global})
		key := "/registry/scheduling.k8s.io/priorityclasses/" + name
		var kv *storage.KeyValue
		var err error
		if rev, ok := revs[name]; ok {
			kv, err = st.Update(ctx, key, data, rev, 0)
		} else {
			kv, err = st.Create(ctx, key, data, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		revs[name] = kv.ModRevision
	}
	expect := func(step, class string, value int32) {
		t.Helper()
		a := podAttrs("ns", "p", "")
		if err := chain.Mutate(ctx, a); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		spec := a.Object.(*corev1.Pod).Spec
		if spec.PriorityClassName != class || spec.Priority == nil || *spec.Priority != value {
			t.Errorf("%s: class %q priority %v, want %q %d", step, spec.PriorityClassName, ptr.Deref(spec.Priority, -1), class, value)
		}
	}

	expect("no classes", "", 0)
	put("low", 10, true)
	expect("a global default created", "low", 10)
	expect("the same classes again", "low", 10)
	put("low", 20, true)
	expect("its value changed", "low", 20)
	put("lower", 5, true)
	expect("a second global default with a lower value", "lower", 5)
	if _, _, err := st.Delete(ctx, "/registry/scheduling.k8s.io/priorityclasses/lower", revs["lower"]); err != nil {
		t.Fatal(err)
	}
	delete(revs, "lower")
	expect("the lower one deleted", "low", 20)
	put("low", 20, false)
	expect("no longer the global default", "", 0)
}
