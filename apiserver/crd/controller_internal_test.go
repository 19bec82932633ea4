package crd

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// TestRelistRetiresVanishedDefinitions: a relist (what the controller does
// after a compaction hid events from its watch) stops serving a CRD that is
// no longer stored and ends the watches of its resource, as the CRD's
// delete event would have.
func TestRelistRetiresVanishedDefinitions(t *testing.T) {
	store := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	reg := registry.New()
	c := NewController(store, reg, nil, nil)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "u1"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, prefix+crd.Name, data, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.loadAll(ctx); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	res, ok := reg.Get(gvr)
	if !ok || res.Retired == nil {
		t.Fatalf("widgets served=%v (%+v), want served with a Retired channel", ok, res)
	}

	if _, _, err := store.Delete(ctx, prefix+crd.Name, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.loadAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get(gvr); ok {
		t.Error("widgets still served after a relist without its CRD")
	}
	select {
	case <-res.Retired:
	case <-time.After(teardownGrace + 5*time.Second):
		t.Error("the watches of widgets were not ended after a relist without its CRD")
	}
}

// failingUpdates is a store whose first CRD update fails as a store error
// would (not a conflict: no event follows it).
type failingUpdates struct {
	Store
	mu     sync.Mutex
	failed bool
}

func (f *failingUpdates) Update(ctx context.Context, key string, value []byte, rev int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error) {
	f.mu.Lock()
	fail := !f.failed && strings.HasPrefix(key, prefix)
	f.failed = f.failed || fail
	f.mu.Unlock()
	if fail {
		return nil, errors.New("database is locked")
	}
	return f.Store.Update(ctx, key, value, rev, ttl, opts...)
}

// TestFinalizingRetriesAfterAStoreError: a terminating CRD whose write
// failed (not for a newer version, which would come back as an event) is
// looked at again, so it still goes.
func TestFinalizingRetriesAfterAStoreError(t *testing.T) {
	real := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	store := &failingUpdates{Store: real}
	c := NewController(store, registry.New(), nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := metav1.Now()
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "u1", DeletionTimestamp: &now,
			Finalizers: []string{cleanupFinalizer}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
		},
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := real.Create(ctx, prefix+crd.Name, data, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(recheckInterval + 10*time.Second)
	for {
		_, err := real.Get(ctx, prefix+crd.Name, 0)
		if errors.Is(err, storage.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminating CRD is still stored after its write failed once (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
