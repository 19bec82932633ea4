package revision

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func TestDataRoundTripsAndUndoesAsAPatch(t *testing.T) {
	old := template("web:1")
	data, err := Data(old)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Template(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, old) {
		t.Fatalf("round trip: %+v", got)
	}
	// kubectl rollout undo applies the data as a strategic merge patch: the template is replaced.
	cur := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: *template("web:2")}}
	cur.Spec.Template.Spec.Containers = append(cur.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s:1"})
	curJSON, _ := json.Marshal(cur)
	out, err := strategicpatch.StrategicMergePatch(curJSON, data, &appsv1.DaemonSet{})
	if err != nil {
		t.Fatal(err)
	}
	var undone appsv1.DaemonSet
	if err := json.Unmarshal(out, &undone); err != nil {
		t.Fatal(err)
	}
	if c := undone.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != "web:1" {
		t.Fatalf("after undo: %+v", c)
	}
	if Hash(old, nil) == Hash(template("web:2"), nil) || Hash(old, nil) != Hash(template("web:1"), nil) {
		t.Fatal("hash must follow the template")
	}
}

// newHistory is a History over a fake client whose lister holds revs.
func newHistory(t *testing.T, revs ...*appsv1.ControllerRevision) (*History, *fake.Clientset) {
	t.Helper()
	var objs []runtime.Object
	for _, r := range revs {
		objs = append(objs, r)
	}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Apps().V1().ControllerRevisions()
	for _, r := range revs {
		if err := inf.Informer().GetStore().Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return &History{Client: client, Lister: inf.Lister(), OwnerGVK: appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		HashLabel: appsv1.ControllerRevisionHashLabelKey}, client
}

var owner = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web"}}

// ownedRev is a revision of owner holding tmpl.
func ownedRev(t *testing.T, name string, tmpl *corev1.PodTemplateSpec, n int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := Data(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-web", Controller: &yes}}},
		Data: runtime.RawExtension{Raw: data}, Revision: n,
	}
}

// As Kubernetes' history.FindEqualRevisions-based lookup does, the template's revision is found
// by its data: one made before a collision count was raised is reused and renumbered as the
// newest, not made again under its new name; one already the newest is left alone.
func TestSyncFindsTheTemplateByData(t *testing.T) {
	cc := int32(1)
	h, client := newHistory(t, ownedRev(t, "web-a", template("web:1"), 1), ownedRev(t, "web-b", template("web:2"), 2))
	cur, owned, err := h.Sync(context.Background(), owner, template("web:1"), &cc)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Name != "web-a" || cur.Revision != 3 || len(owned) != 2 || owned[1].Name != "web-a" {
		t.Fatalf("current %s at %d, owned %d: want web-a renumbered 3 and last", cur.Name, cur.Revision, len(owned))
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" {
			t.Fatalf("created a duplicate revision: %v", a)
		}
	}

	h, client = newHistory(t, ownedRev(t, "web-a", template("web:1"), 1), ownedRev(t, "web-b", template("web:2"), 2))
	cur, _, err = h.Sync(context.Background(), owner, template("web:2"), &cc)
	if err != nil || cur.Name != "web-b" || cur.Revision != 2 || len(client.Actions()) != 0 {
		t.Fatalf("current %v, err %v, actions %v: want web-b unchanged", cur, err, client.Actions())
	}
}

// A revision under the template's name that the cache has not seen is the template's revision if
// it holds the same data (an earlier sync made it), and a hash collision otherwise.
func TestSyncNameTakenOutsideTheCache(t *testing.T) {
	name := "web-" + Hash(template("web:1"), nil)
	h, _ := newHistory(t)
	same := ownedRev(t, name, template("web:1"), 1)
	if _, err := h.Client.AppsV1().ControllerRevisions("ns").Create(context.Background(), same, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, _, err := h.Sync(context.Background(), owner, template("web:1"), nil)
	if err != nil || cur.Name != name {
		t.Fatalf("current %v, err %v: want the existing %s", cur, err, name)
	}

	h, _ = newHistory(t)
	clash := ownedRev(t, name, template("web:9"), 1)
	clash.OwnerReferences = nil
	if _, err := h.Client.AppsV1().ControllerRevisions("ns").Create(context.Background(), clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Sync(context.Background(), owner, template("web:1"), nil); !errors.Is(err, ErrCollision) {
		t.Fatalf("err %v, want ErrCollision", err)
	}
}
