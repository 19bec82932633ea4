package crd

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/registry"
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
