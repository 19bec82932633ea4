package agent

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A renewal is one update of the lease last written, not a get and an
// update (with thousands of nodes that halves the heartbeat traffic); a
// lease deleted meanwhile is created again.
func TestLeaseRenewalWritesWithoutReading(t *testing.T) {
	ctx := context.Background()
	owner := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}}
	client := fake.NewClientset(owner)
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cfg: cfg, client: client}
	count := func(verb string) int {
		c := 0
		for _, a := range client.Actions() {
			if a.GetResource().Resource == "leases" && a.GetVerb() == verb {
				c++
			}
		}
		return c
	}
	for i := 0; i < 3; i++ {
		if err := n.renewLease(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	if gets, creates, updates := count("get"), count("create"), count("update"); gets != 1 || creates != 1 || updates != 2 {
		t.Errorf("three renewals: %d gets, %d creates, %d updates; want 1 get (before the create), 1 create, 2 updates", gets, creates, updates)
	}
	lease, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n", metav1.GetOptions{})
	if err != nil || lease.Spec.RenewTime == nil || len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != "node-uid" {
		t.Fatalf("lease %+v (%v): want renewed and owned by the node", lease, err)
	}
	if err := client.CoordinationV1().Leases(NodeLeaseNamespace).Delete(ctx, "n", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if err := n.renewLease(ctx, owner); err != nil {
		t.Fatalf("renewal after the lease was deleted: %v", err)
	}
	if _, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n", metav1.GetOptions{}); err != nil {
		t.Errorf("lease not created again: %v", err)
	}
}
