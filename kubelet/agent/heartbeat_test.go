package agent

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// leaseNode is the node part of an agent for node "n" with a fake client
// holding the Node, for renewing its lease.
func leaseNode(t *testing.T) (*node, *corev1.Node, *fake.Clientset) {
	t.Helper()
	owner := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "node-uid"}}
	client := fake.NewClientset(owner)
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return &node{cfg: cfg, client: client}, owner, client
}

// A renewal is one update of the lease last written, not a get and an
// update (with thousands of nodes that halves the heartbeat traffic); a
// lease deleted meanwhile is created again.
func TestLeaseRenewalWritesWithoutReading(t *testing.T) {
	ctx := context.Background()
	n, owner, client := leaseNode(t)
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

// A renewal whose update fails (the API server briefly unavailable) is
// tried again at once, as the kubelet's lease controller tries five times in
// a row, then reads the lease again, backing off while that fails too, and
// updates it once it answers: the lease is renewed in this renewal, not a
// renewal interval (a quarter of its duration) later.
func TestLeaseRenewalRetriesAFailedUpdate(t *testing.T) {
	ctx := context.Background()
	n, owner, client := leaseNode(t)
	if err := n.renewLease(ctx, owner); err != nil {
		t.Fatal(err)
	}
	first, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	failures := map[string]int{"update": 7, "get": 2}
	client.PrependReactor("*", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if failures[action.GetVerb()] == 0 {
			return false, nil, nil
		}
		failures[action.GetVerb()]--
		return true, nil, apierrors.NewServiceUnavailable("the server is shutting down")
	})
	if err := n.renewLease(ctx, owner); err != nil {
		t.Fatalf("renewal: %v; want it renewed once the API server answers", err)
	}
	mu.Lock()
	left := failures["update"] + failures["get"]
	mu.Unlock()
	if left != 0 {
		t.Errorf("%d failures left: the renewal gave up before the API server answered", left)
	}
	renewed, err := client.CoordinationV1().Leases(NodeLeaseNamespace).Get(ctx, "n", metav1.GetOptions{})
	if err != nil || !renewed.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
		t.Errorf("lease %+v (%v): want renewed after %v", renewed, err, first.Spec.RenewTime)
	}
}

// An unchanged node status is written once per StatusReportInterval, not
// at every check (the kubelet's nodeStatusReportFrequency); a change is
// written at once.
func TestUnchangedNodeStatusWaitsForTheReportInterval(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cfg: cfg, client: client, runtime: fakeVersionRuntime{}}
	writes := func() int {
		c := 0
		for _, a := range client.Actions() {
			if a.GetResource().Resource == "nodes" && a.GetVerb() == "update" && a.GetSubresource() == "status" {
				c++
			}
		}
		return c
	}
	for i := 0; i < 3; i++ {
		if _, err := n.updateStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if w := writes(); w != 1 {
		t.Errorf("three checks of an unchanged status: %d writes, want 1", w)
	}
	n.cfg.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
	if _, err := n.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(); w != 2 {
		t.Errorf("after a capacity change: %d writes, want 2", w)
	}
	n.cfg.StatusReportInterval = time.Nanosecond
	if _, err := n.updateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if w := writes(); w != 3 {
		t.Errorf("an unchanged status past the report interval: %d writes, want 3", w)
	}
}

// fakeVersionRuntime is just enough runtime for node status.
type fakeVersionRuntime struct{ Runtime }

func (fakeVersionRuntime) Name() string                            { return "test" }
func (fakeVersionRuntime) Version(context.Context) (string, error) { return "1.0", nil }

// The heartbeat hands on the Node it refreshed, so the agent learns the pod
// CIDR the node IPAM controller assigned after registration without a read
// of its own when its first pod comes.
func TestHeartbeatHandsOnTheNodeItRefreshed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	registered := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	assigned := registered.DeepCopy()
	assigned.Spec.PodCIDR = "10.42.7.0/24"
	client := fake.NewClientset(assigned)
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler), StatusUpdateInterval: 20 * time.Millisecond}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cfg: cfg, client: client, runtime: fakeVersionRuntime{}, poked: make(chan struct{}, 1)}
	seen := make(chan *corev1.Node, 100)
	go n.heartbeat(ctx, registered, func(n *corev1.Node) { seen <- n })
	select {
	case got := <-seen:
		if got.Spec.PodCIDR != "10.42.7.0/24" {
			t.Fatalf("the heartbeat handed on a node with pod CIDR %q, want the assigned 10.42.7.0/24", got.Spec.PodCIDR)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat handed on no node")
	}
}

// A new node is registered as a kubelet registers it: one create that
// carries the status, so the scheduler can place pods on it at once and a
// thousand hollow nodes starting together send a thousand requests, not
// three thousand. A node that already exists keeps its object and gets its
// status written.
func TestRegistrationCreatesTheNodeWithItsStatus(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	capacity := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler), Capacity: capacity}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cfg: cfg, client: client, runtime: fakeVersionRuntime{}}
	got, err := n.register(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	if len(verbs) != 1 || verbs[0] != "create nodes/" {
		t.Errorf("registering a new node sent %q, want one create", verbs)
	}
	stored, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []*corev1.Node{got, stored} {
		if !nodeIsReady(node) || !node.Status.Capacity.Pods().Equal(resource.MustParse("110")) || node.Status.NodeInfo.ContainerRuntimeVersion != "test://1.0" {
			t.Errorf("registered node status %+v: want Ready, 110 pods of capacity and the runtime's version", node.Status)
		}
	}

	// Again, as a restarted agent: the node exists, its status is refreshed.
	client.ClearActions()
	n.cfg.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("20")}
	n.reported.Store(0)
	if got, err = n.register(ctx); err != nil {
		t.Fatal(err)
	}
	if !got.Status.Capacity.Pods().Equal(resource.MustParse("20")) {
		t.Errorf("re-registered node capacity %v, want 20 pods", got.Status.Capacity.Pods())
	}
	statusWrites := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			statusWrites++
		}
	}
	if statusWrites != 1 {
		t.Errorf("re-registration wrote the status %d times, want 1", statusWrites)
	}
}

func nodeIsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
