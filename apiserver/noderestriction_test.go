package apiserver_test

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// A node agent's credential writes only its own Lease, as Kubernetes'
// NodeRestriction (admitLease) holds it: authorization cannot, because a
// created Lease's name is in the body. Node n1 could create n2's Lease
// (a renewTime far ahead kept a dead n2 looking alive, once its Lease was
// gone with it) or any lease in kube-node-lease.
func TestNodeCreatesOnlyItsOwnLease(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	leases := n1.CoordinationV1().Leases("kube-node-lease")
	for _, name := range []string{"n2", "not-a-node"} {
		_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("node n1 creates lease %s: %v, want Forbidden", name, err)
		}
	}
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "n"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node n1 creates a lease with a generated name: %v, want Forbidden", err)
	}
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("node n1 creates its own lease: %v", err)
	}
}

// A node may not steer workloads to itself through its own Node, as
// Kubernetes' NodeRestriction (admitNode) holds it: it registers without
// node-restriction.kubernetes.io labels or kubernetes.io and k8s.io labels
// other than the kubelet's own, and it changes neither those labels nor
// its taints afterwards. Node n1 could drop the taint that kept other
// tenants' pods off it and label itself into their node selectors.
func TestNodeCannotRelabelOrUntaintItself(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := clientsetFor(t, srv.Config)
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	nodes := n1.CoreV1().Nodes()

	for _, label := range []string{"node-restriction.kubernetes.io/tenant", "example.node-restriction.kubernetes.io/x", "node-role.kubernetes.io/control-plane", "sub.k8s.io/x"} {
		_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{label: "x"}}}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), label) {
			t.Errorf("node n1 registers with label %s: %v, want Forbidden naming it", label, err)
		}
	}
	own := map[string]string{
		corev1.LabelHostname: "n1", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", corev1.LabelTopologyZone: "z",
		"kubelet.kubernetes.io/x": "y", "a.node.kubernetes.io/x": "y", "tier": "web",
	}
	if _, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: own},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node n1 registers with the kubelet's labels and a taint: %v", err)
	}

	for _, tc := range []struct{ what, patch string }{
		{"removes its taint", `{"spec":{"taints":null}}`},
		{"adds a taint", `{"spec":{"taints":[{"key":"dedicated","value":"ci","effect":"NoSchedule"},{"key":"x","effect":"NoExecute"}]}}`},
		{"adds a node-restriction label", `{"metadata":{"labels":{"node-restriction.kubernetes.io/tenant":"a"}}}`},
		{"adds a node-role label", `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`},
	} {
		if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("node n1 %s: %v, want Forbidden", tc.what, err)
		}
	}
	// What the kubelet keeps up to date is still its own to change.
	if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"db","topology.kubernetes.io/zone":"z2"}},"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("node n1 changes its own labels and cordons itself: %v", err)
	}
	if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("node n1 patches its status: %v", err)
	}
	// Others (the admin, controllers) are not restricted.
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/tenant":"a"}},"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("admin relabels and untaints n1: %v", err)
	}
	got, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 0 || got.Labels["node-restriction.kubernetes.io/tenant"] != "a" || got.Labels["tier"] != "db" {
		t.Errorf("n1 = labels %v, taints %v", got.Labels, got.Spec.Taints)
	}
	// The node may then carry on with the labels the admin gave it.
	if _, err := nodes.Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("node n1 changes another label beside the admin's: %v", err)
	}
}

// A node may not delete its Node, as Kubernetes' system:node role grants
// nodes no delete on nodes: deleting it and registering again would shed
// the taints and labels an administrator set on it, which the node may
// not change (TestNodeCannotRelabelOrUntaintItself), and register it
// untainted.
func TestNodeCannotDeleteItself(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	admin := clientsetFor(t, srv.Config)
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	if _, err := n1.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType,
		[]byte(`{"spec":{"taints":[{"key":"dedicated","value":"ci","effect":"NoSchedule"}]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := n1.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node n1 deletes its Node: %v, want Forbidden", err)
	}
	got, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("n1 after its own delete: %v", err)
	}
	if len(got.Spec.Taints) != 1 {
		t.Errorf("n1's taints after its own delete: %v, want the administrator's", got.Spec.Taints)
	}
}
