package controllerref

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var gvk = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}

func obj(name string, lbls map[string]string, owner types.UID) *metav1.ObjectMeta {
	o := &metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "7", Labels: lbls}
	if owner != "" {
		yes := true
		o.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", UID: owner, Controller: &yes}}
	}
	return o
}

func TestClaim(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "uid-rs"}
	match := map[string]string{"app": "web"}
	other := map[string]string{"app": "db"}
	objs := []metav1.Object{
		obj("mine", match, "uid-rs"),
		obj("orphan", match, ""),
		obj("stray", other, "uid-rs"),
		obj("theirs", match, "uid-other"),
		obj("unrelated", other, ""),
	}
	patches := map[string]map[string]any{}
	c := Claimer{
		Owner: owner, OwnerGVK: gvk, Selector: labels.SelectorFromSet(match),
		Patch: func(_ context.Context, _, name string, patch []byte) error {
			var p map[string]any
			if err := json.Unmarshal(patch, &p); err != nil {
				t.Fatal(err)
			}
			patches[name] = p["metadata"].(map[string]any)
			return nil
		},
	}
	claimed, err := c.Claim(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range claimed {
		names = append(names, o.GetName())
	}
	if len(names) != 2 || names[0] != "mine" || names[1] != "orphan" {
		t.Errorf("claimed %v, want [mine orphan]", names)
	}
	if len(patches) != 2 {
		t.Fatalf("patched %v, want orphan and stray", patches)
	}
	adopt := patches["orphan"]
	refs := adopt["ownerReferences"].([]any)
	if adopt["uid"] != "uid-orphan" || adopt["resourceVersion"] != "7" || len(refs) != 1 || refs[0].(map[string]any)["uid"] != "uid-rs" || refs[0].(map[string]any)["controller"] != true {
		t.Errorf("adopt patch = %v", adopt)
	}
	if refs := patches["stray"]["ownerReferences"].([]any); len(refs) != 0 {
		t.Errorf("release patch kept references: %v", refs)
	}
}

// An owned object that no longer matches is released even while it is being deleted, and loses the
// finalizers the owner adds on adoption (Kubernetes' ClaimObject and ReleasePod).
func TestClaimReleasesDyingObjectAndItsAdoptionFinalizers(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "uid-job"}
	dying := obj("stray", map[string]string{"app": "db"}, "uid-job")
	now := metav1.Now()
	dying.DeletionTimestamp = &now
	dying.Finalizers = []string{"example.com/keep", "batch.kubernetes.io/job-tracking"}
	var meta map[string]any
	c := Claimer{
		Owner: owner, OwnerGVK: gvk, Selector: labels.SelectorFromSet(map[string]string{"app": "web"}),
		Finalizers: []string{"batch.kubernetes.io/job-tracking"},
		Patch: func(_ context.Context, _, _ string, patch []byte) error {
			var p map[string]any
			if err := json.Unmarshal(patch, &p); err != nil {
				t.Fatal(err)
			}
			meta = p["metadata"].(map[string]any)
			return nil
		},
	}
	claimed, err := c.Claim(context.Background(), []metav1.Object{dying})
	if err != nil || len(claimed) != 0 {
		t.Fatalf("claimed %d, err %v; want the stray released", len(claimed), err)
	}
	if meta == nil {
		t.Fatal("a dying object that no longer matches was not released")
	}
	if refs := meta["ownerReferences"].([]any); len(refs) != 0 {
		t.Errorf("release kept references: %v", refs)
	}
	if fins, _ := meta["finalizers"].([]any); len(fins) != 1 || fins[0] != "example.com/keep" || meta["resourceVersion"] != "7" {
		t.Errorf("release patch = %v, want finalizers [example.com/keep] at resourceVersion 7", meta)
	}
}

func TestClaimSkipsObjectsGoneBeforePatch(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "uid-rs"}
	match := map[string]string{"app": "web"}
	c := Claimer{
		Owner: owner, OwnerGVK: gvk, Selector: labels.SelectorFromSet(match),
		Patch: func(_ context.Context, _, name string, _ []byte) error {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
		},
	}
	claimed, err := c.Claim(context.Background(), []metav1.Object{
		obj("orphan", match, ""),
		obj("stray", map[string]string{"app": "db"}, "uid-rs"),
	})
	if err != nil || len(claimed) != 0 {
		t.Errorf("claimed %d, err %v; want nothing claimed and no error", len(claimed), err)
	}
}

func TestClaimRefusesAdoptionWhenRecheckFails(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "uid-rs"}
	patched := 0
	c := Claimer{
		Owner: owner, OwnerGVK: gvk, Selector: labels.SelectorFromSet(map[string]string{"app": "web"}),
		Patch:    func(context.Context, string, string, []byte) error { patched++; return nil },
		CanAdopt: func(context.Context) error { return errors.New("owner was replaced") },
	}
	claimed, err := c.Claim(context.Background(), []metav1.Object{obj("orphan", map[string]string{"app": "web"}, "")})
	if err == nil || len(claimed) != 0 || patched != 0 {
		t.Errorf("claimed %d, patched %d, err %v; want nothing and an error", len(claimed), patched, err)
	}
}

func TestControllerOf(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "rs", Namespace: "ns", UID: "u1"}
	get := func(ns, name string) (*metav1.ObjectMeta, error) {
		if ns == "ns" && name == "rs" {
			return owner, nil
		}
		return nil, errors.New("not found")
	}
	ref := New(owner, gvk)
	child := &metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{ref}}
	if got, ok := ControllerOf(child, gvk, get); !ok || got != owner {
		t.Fatalf("controller not found: %v %v", got, ok)
	}
	other := gvk
	other.Kind = "StatefulSet"
	if _, ok := ControllerOf(child, other, get); ok {
		t.Fatal("a controller of another kind was returned")
	}
	legacy := ref
	legacy.APIVersion = "extensions/v1beta1"
	if got, ok := ControllerOf(&metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{legacy}}, gvk, get); !ok || got != owner {
		t.Fatal("a reference through an older apiVersion of the kind was not resolved")
	}
	ref.UID = "u0" // an earlier incarnation of the same name
	stale := &metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{ref}}
	if _, ok := ControllerOf(stale, gvk, get); ok {
		t.Fatal("an owner with another UID was returned")
	}
	if _, ok := ControllerOf(&metav1.ObjectMeta{Namespace: "ns"}, gvk, get); ok {
		t.Fatal("an object without a controller has one")
	}
}

func TestAdoptionAddsFinalizers(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "uid-job"}
	match := map[string]string{"app": "batch"}
	orphan := obj("orphan", match, "")
	orphan.Finalizers = []string{"example.com/keep"}
	tracked := obj("tracked", match, "")
	tracked.Finalizers = []string{"example.com/track"}
	var patches []map[string]any
	c := Claimer{
		Owner: owner, OwnerGVK: gvk, Selector: labels.SelectorFromSet(match), Finalizers: []string{"example.com/track"},
		Patch: func(_ context.Context, _, _ string, patch []byte) error {
			var p map[string]any
			if err := json.Unmarshal(patch, &p); err != nil {
				t.Fatal(err)
			}
			patches = append(patches, p["metadata"].(map[string]any))
			return nil
		},
	}
	if _, err := c.Claim(context.Background(), []metav1.Object{orphan, tracked}); err != nil {
		t.Fatal(err)
	}
	if len(patches) != 2 {
		t.Fatalf("patches: %v", patches)
	}
	if f, _ := json.Marshal(patches[0]["finalizers"]); string(f) != `["example.com/keep","example.com/track"]` || patches[0]["resourceVersion"] != "7" || patches[0]["uid"] != "uid-orphan" {
		t.Errorf("adopt patch = %v", patches[0])
	}
	if _, ok := patches[1]["finalizers"]; ok {
		t.Errorf("patch of an object already holding the finalizer rewrites them: %v", patches[1])
	}
}
