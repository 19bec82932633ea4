package apiserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestDeletingDefinitionWaitsForInstanceFinalizers: deleting a CRD deletes
// its objects as a DELETE of each would, so one holding a finalizer gets a
// deletionTimestamp and stays, still readable and updatable (its
// controller must be able to finish and remove the finalizer), while the
// CRD waits, Terminating, refusing only creates (405) and listing only
// delete, deletecollection, get, list and watch in discovery. Once the
// finalizer goes the object and then the CRD are gone. As Kubernetes'
// crdFinalizer and crdHandler.
func TestDeletingDefinitionWaitsForInstanceFinalizers(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	held := customObject(v1, "Widget", "held")
	held.SetFinalizers([]string{"example.com/hold"})
	widgets := dyn.Resource(v1).Namespace("default")
	if _, err := widgets.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.Create(ctx, customObject(v1, "Widget", "free"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(crdsGVR).Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "the object without finalizers deleted and the held one marked", func() (bool, string) {
		_, err := widgets.Get(ctx, "free", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, "free: " + errString(err)
		}
		got, err := widgets.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, "held: " + err.Error()
		}
		if got.GetDeletionTimestamp() == nil {
			return false, "held has no deletionTimestamp"
		}
		return true, ""
	})
	eventually(t, "the CRD Terminating, InstanceDeletionInProgress", func() (bool, string) {
		crd := getCRD(t, dyn, "widgets.example.com")
		if crd == nil {
			return false, "the CRD is gone"
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Terminating {
				return c.Status == apiextensionsv1.ConditionTrue && c.Reason == "InstanceDeletionInProgress", c.Reason + " " + c.Message
			}
		}
		return false, "no Terminating condition"
	})
	if crd := getCRD(t, dyn, "widgets.example.com"); crd == nil || !slices.Contains(crd.Finalizers, "customresourcecleanup.apiextensions.k8s.io") {
		t.Fatalf("the CRD is gone or lost its cleanup finalizer while an object remains: %+v", crd)
	}

	_, err := widgets.Create(ctx, customObject(v1, "Widget", "late"), metav1.CreateOptions{})
	if !apierrors.IsMethodNotSupported(err) || err.Error() != "create not allowed while custom resource definition is terminating" {
		t.Errorf("create while terminating: %v, want 405 create not allowed while custom resource definition is terminating", err)
	}
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("list while terminating: %v items, %v; want the held object", list, err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(srv.Config)
	rl, err := dc.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, r := range rl.APIResources {
		if r.Name == "widgets" {
			verbs = r.Verbs
		}
	}
	if want := []string{"delete", "deletecollection", "get", "list", "watch"}; !slices.Equal(slices.Sorted(slices.Values(verbs)), want) {
		t.Errorf("discovery verbs while terminating %v, want %v", verbs, want)
	}

	// The object's controller finishes: an update (here a label) and the
	// finalizer's removal are still served.
	if _, err := widgets.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"labels":{"done":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("update while terminating: %v", err)
	}
	if _, err := widgets.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	eventually(t, "the CRD gone once its last object is", func() (bool, string) {
		return getCRD(t, dyn, "widgets.example.com") == nil, "the CRD remains"
	})
	waitServed(t, srv, v1, false)
}

func getCRD(t *testing.T, dyn dynamic.Interface, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	u, err := dyn.Resource(crdsGVR).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func errString(err error) string {
	if err == nil {
		return "still there"
	}
	return err.Error()
}

// eventually polls cond for up to 20 s (the finalizer's re-check runs
// every few seconds), failing with its last reason.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
