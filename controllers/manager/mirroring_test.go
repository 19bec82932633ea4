package manager

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
)

// Against a real API server, with the mirroring controller acting as its
// own service account (system:controller:endpointslicemirroring-controller)
// as skiff server runs it: a Service without a selector and its hand-written
// Endpoints get a mirrored EndpointSlice, updated in place when the
// Endpoints change and deleted once the Service gains a selector. The API
// server's own kubernetes Endpoints (skip-mirror) are left alone.
func TestEndpointSliceMirroringAgainstAPIServer(t *testing.T) {
	r := runControllers(t, []string{"endpointslicemirroring"}, nil)
	admin, root, m, ctx := r.admin, r.root, r.m, r.ctx
	if got := m.Controllers(); !slices.Equal(got, []string{endpointslicemirroring.Name}) {
		t.Fatalf("controllers = %v, want the mirroring controller by its kube alias", got)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", Labels: map[string]string{"team": "data"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.10"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.11"}},
			Ports:             []corev1.EndpointPort{{Name: "pg", Port: 5432}},
		}},
	}
	ep, err := admin.CoreV1().Endpoints("default").Create(ctx, ep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	mirrored := labels.SelectorFromSet(labels.Set{discoveryv1.LabelManagedBy: endpointslicemirroring.ControllerName}).String()
	waitSlices := func(what string, ok func([]discoveryv1.EndpointSlice) bool) []discoveryv1.EndpointSlice {
		t.Helper()
		var items []discoveryv1.EndpointSlice
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := admin.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{LabelSelector: mirrored})
			if err != nil {
				return false, nil
			}
			items = l.Items
			return ok(items), nil
		}); err != nil {
			t.Fatalf("%s: mirrored slices %+v", what, items)
		}
		return items
	}
	endpointsOf := func(s discoveryv1.EndpointSlice) map[string]bool {
		out := map[string]bool{}
		for _, e := range s.Endpoints {
			out[e.Addresses[0]] = e.Conditions.Ready != nil && *e.Conditions.Ready
		}
		return out
	}

	items := waitSlices("the Endpoints never mirrored", func(s []discoveryv1.EndpointSlice) bool { return len(s) > 0 })
	if len(items) != 1 {
		t.Fatalf("mirrored slices = %+v, want one (the kubernetes Endpoints are not mirrored)", items)
	}
	s := items[0]
	if s.Namespace != "default" || s.Labels[discoveryv1.LabelServiceName] != "db" || s.Labels["team"] != "data" || s.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("slice %s/%s labels %v addressType %s", s.Namespace, s.Name, s.Labels, s.AddressType)
	}
	if ref := metav1.GetControllerOf(&s); ref == nil || ref.Kind != "Endpoints" || ref.UID != ep.UID {
		t.Errorf("owner %+v, want the Endpoints %s", s.OwnerReferences, ep.UID)
	}
	if len(s.Ports) != 1 || *s.Ports[0].Name != "pg" || *s.Ports[0].Port != 5432 || *s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v", s.Ports)
	}
	if got := endpointsOf(s); len(got) != 2 || !got["192.0.2.10"] || got["192.0.2.11"] {
		t.Errorf("endpoints (address: ready) %v, want 192.0.2.10 ready, 192.0.2.11 not", got)
	}

	// A changed Endpoints changes the same slice.
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: "192.0.2.12"})
	if _, err := admin.CoreV1().Endpoints("default").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	items = waitSlices("the new address never mirrored", func(s []discoveryv1.EndpointSlice) bool {
		return len(s) == 1 && len(s[0].Endpoints) == 3
	})
	if items[0].Name != s.Name {
		t.Errorf("slice %s replaced by %s, want it updated in place", s.Name, items[0].Name)
	}

	// The manager's own identity may not write slices: the controller's account did.
	probe := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, AddressType: discoveryv1.AddressTypeIPv4}
	if _, err := root.DiscoveryV1().EndpointSlices("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("the manager's own identity creating an EndpointSlice: %v, want 403 (then it could have been the writer)", err)
	}
	account := ServiceAccounts[endpointslicemirroring.Name]
	if _, err := admin.CoreV1().ServiceAccounts(ControllerNamespace).Get(ctx, account, metav1.GetOptions{}); err != nil {
		t.Errorf("the controller's account %s/%s: %v", ControllerNamespace, account, err)
	}

	// A selector hands the Service to the EndpointSlice controller: the mirrored slice goes.
	patch := []byte(`{"spec":{"selector":{"app":"db"}}}`)
	if _, err := admin.CoreV1().Services("default").Patch(ctx, "db", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSlices("the mirrored slice outlived the selector", func(s []discoveryv1.EndpointSlice) bool { return len(s) == 0 })
}
