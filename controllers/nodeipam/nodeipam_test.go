package nodeipam

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func node(name, cidr string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if cidr != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
	}
	return n
}

func newFixture(t *testing.T, opts Options, nodes ...runtime.Object) (*Controller, *fake.Clientset, informers.SharedInformerFactory) {
	t.Helper()
	c, client, f, _ := newFixtureWithEvents(t, opts, nodes...)
	return c, client, f
}

func newFixtureWithEvents(t *testing.T, opts Options, nodes ...runtime.Object) (*Controller, *fake.Clientset, informers.SharedInformerFactory, *record.FakeRecorder) {
	t.Helper()
	client := controllertest.NewClient(nodes...)
	f := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	c, err := New(client, f.Core().V1().Nodes(), recorder, opts)
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Load(t, f.Core().V1().Nodes().Informer(), nodes...)
	return c, client, f, recorder
}

func podCIDR(t *testing.T, client *fake.Clientset, name string) string {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
		t.Errorf("node %s: podCIDR %q podCIDRs %v disagree", name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	return n.Spec.PodCIDR
}

func TestAllocation(t *testing.T) {
	ctx := context.Background()
	// n1 already holds 10.42.0.0/24 (e.g. from before a restart): it must not be handed out again.
	c, client, f := newFixture(t, Options{}, node("n1", "10.42.0.0/24"), node("n2", ""), node("n3", ""))
	for _, n := range []string{"n2", "n3", "n1"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"n1": "10.42.0.0/24", "n2": "10.42.1.0/24", "n3": "10.42.2.0/24"}
	for n, w := range want {
		if got := podCIDR(t, client, n); got != w {
			t.Errorf("%s: podCIDR %s, want %s", n, got, w)
		}
	}
	// Deleting n2 frees its CIDR; the next allocations go on past it first, then reuse it.
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Delete(node("n2", "")); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if _, held := c.alloc.byNode["n2"]; held {
		t.Error("deleted node kept its CIDR")
	}
}

// TestExhaustionAndReuse: a node the cluster CIDR has no subnet left for
// gets none and kube-controller-manager's status-change event (type
// Normal, as its RecordNodeStatusChange records it); a deleted node's
// subnet goes to it.
func TestExhaustionAndReuse(t *testing.T) {
	ctx := context.Background()
	c, client, f, rec := newFixtureWithEvents(t, Options{ClusterCIDR: "10.0.0.0/23", NodeMaskSize: 24}, node("a", ""), node("b", ""), node("c", ""))
	for _, n := range []string{"a", "b"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.sync(ctx, "c"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("third node in a /23 of /24s: err = %v, want ErrExhausted", err)
	}
	select {
	case ev := <-rec.Events:
		if want := "Normal CIDRNotAvailable Node c status is now: CIDRNotAvailable"; ev != want {
			t.Errorf("event %q, want %q", ev, want)
		}
	default:
		t.Error("no event for the node left without a CIDR")
	}
	_ = f.Core().V1().Nodes().Informer().GetIndexer().Delete(node("a", ""))
	if err := c.sync(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if got := podCIDR(t, client, "c"); got != "10.0.0.0/24" {
		t.Errorf("c got %s, want the freed 10.0.0.0/24", got)
	}
}

func TestStaleCacheKeepsTheSameCIDR(t *testing.T) {
	ctx := context.Background()
	c, client, _ := newFixture(t, Options{}, node("n1", ""))
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	first := podCIDR(t, client, "n1")
	// The informer still shows n1 without a CIDR: syncing again must not take a second one.
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := podCIDR(t, client, "n1"); got != first || len(c.alloc.used) != 1 {
		t.Errorf("second sync: %s (first %s), %d subnets used", got, first, len(c.alloc.used))
	}
}

// Nodes that got their CIDRs under another mask size (the setting changed, or they were set by hand)
// keep every subnet their CIDR overlaps: none is handed out inside it.
func TestCIDRsOfAnotherSizeAreOccupied(t *testing.T) {
	ctx := context.Background()
	c, client, _ := newFixture(t, Options{ClusterCIDR: "10.0.0.0/24", NodeMaskSize: 26},
		node("old", "10.0.0.0/25"), node("small", "10.0.0.200/29"), node("n1", ""), node("n2", ""))
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := podCIDR(t, client, "n1"); got != "10.0.0.128/26" {
		t.Errorf("n1 got %s, want the one /26 that neither a /25 at .0 nor a /29 at .200 overlaps", got)
	}
	if err := c.sync(ctx, "n2"); !errors.Is(err, ErrExhausted) {
		t.Errorf("n2: err = %v, want ErrExhausted", err)
	}
	// A node whose CIDR overlaps another's keeps it, and frees only its own subnets when deleted.
	if c.alloc.occupy("dup", "10.0.0.64/26") != "old" {
		t.Error("a /26 inside old's /25 was taken as free")
	}
	c.alloc.release("dup")
	if c.alloc.used[1] != "old" {
		t.Errorf("subnet 1 held by %q after the overlapping node went, want old", c.alloc.used[1])
	}
	if _, _, ok := c.alloc.span("10.1.0.0/16"); ok {
		t.Error("a CIDR outside the cluster CIDR overlaps it")
	}
	if first, n, ok := c.alloc.span("10.0.0.0/8"); !ok || first != 0 || n != 4 {
		t.Errorf("span of a CIDR holding the cluster CIDR = %d %d %v, want all 4", first, n, ok)
	}
}

func TestCheckCIDRs(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		mask int
		want string // "" = accepted
	}{
		{"10.42.0.0/16", 24, ""},
		{"10.42.0.0/24", 26, ""},
		{"10.42.0.0/16", 30, ""},
		{"10.0.0.0/8", 28, ""},
		{"10.42.0.0", 24, "cluster CIDR"},
		{"10.42.0.0/24", 24, "must be longer than the cluster CIDR's /24"},
		{"10.42.0.0/16", 31, "no room for a gateway and a pod: at most /30"},
		{"10.0.0.0/8", 29, "more than 2^20 subnets: at most /28"},
	} {
		err := CheckCIDRs(tc.cidr, tc.mask, "")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s /%d: %v", tc.cidr, tc.mask, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s /%d: err = %v, want %q", tc.cidr, tc.mask, err, tc.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	for _, o := range []Options{{ClusterCIDR: "10.42.0.0"}, {ClusterCIDR: "10.42.0.0/16", NodeMaskSize: 8}, {ClusterCIDR: "10.42.0.0/16", NodeMaskSize: 40}} {
		if _, err := New(client, f.Core().V1().Nodes(), record.NewFakeRecorder(1), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestIPv6(t *testing.T) {
	a, err := newAllocator("fd00:42::/56", 64, "")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.allocate("x")
	s2, _ := a.allocate("y")
	if s != "fd00:42::/64" || s2 != "fd00:42:0:1::/64" {
		t.Errorf("got %s %s", s, s2)
	}
	if i, n, ok := a.span(s2); !ok || i != 1 || n != 1 {
		t.Errorf("span(%s) = %d %d %v", s2, i, n, ok)
	}
}

// As kube-controller-manager's --service-cluster-ip-range: no node gets a pod CIDR inside the Service
// range where the cluster CIDR overlaps it, and a node already holding one is told so.
func TestServiceRangeIsCarvedOut(t *testing.T) {
	ctx := context.Background()
	c, client, f, events := newFixtureWithEvents(t, Options{ClusterCIDR: "10.0.0.0/22", NodeMaskSize: 24, ServiceCIDR: "10.0.1.128/25"},
		node("a", ""), node("b", ""), node("c", ""), node("d", ""))
	for _, n := range []string{"a", "b", "c"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, n := range []string{"a", "b", "c"} {
		got = append(got, podCIDR(t, client, n))
	}
	if want := []string{"10.0.0.0/24", "10.0.2.0/24", "10.0.3.0/24"}; !slices.Equal(got, want) {
		t.Errorf("pod CIDRs %v, want %v: none holding the Service range 10.0.1.128/25", got, want)
	}
	if err := c.sync(ctx, "d"); !errors.Is(err, ErrExhausted) {
		t.Errorf("d: err = %v, want ErrExhausted", err)
	}
	// A node registered with a CIDR inside the Service range (set by hand, or under other settings).
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Add(node("old", "10.0.1.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	evs := strings.Join(controllertest.Events(events.Events), "\n")
	if want := "Warning CIDRNotAvailable Node old has pod CIDR 10.0.1.0/24, which overlaps the Service IP range 10.0.1.128/25"; !strings.Contains(evs, want) {
		t.Errorf("events:\n%s\nwant %q", evs, want)
	}
	// A node deleted while holding it frees nothing of the Service range.
	c.alloc.release("old")
	if err := c.sync(ctx, "d"); !errors.Is(err, ErrExhausted) {
		t.Errorf("d after old went: err = %v, want ErrExhausted", err)
	}
}

func TestServiceRangeHoldingTheClusterCIDRIsRefused(t *testing.T) {
	for _, tc := range []struct{ cluster, service, want string }{
		{"10.42.0.0/16", "10.32.0.0/12", "the Service range 10.32.0.0/12 holds all of the cluster CIDR 10.42.0.0/16: no pod CIDR would be left"},
		{"10.42.0.0/24", "10.42.0.0/24", "the Service range 10.42.0.0/24 holds all of the cluster CIDR 10.42.0.0/24"},
		{"10.42.0.0/16", "10.42.0.0/17", ""},
		{"10.42.0.0/16", "10.43.0.0/16", ""},
		{"10.42.0.0/16", "", ""},
	} {
		err := CheckCIDRs(tc.cluster, 26, tc.service)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s, service %s: %v", tc.cluster, tc.service, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s, service %s: err = %v, want %q", tc.cluster, tc.service, err, tc.want)
		}
	}
}

// A node that got a pod CIDR from elsewhere while the controller's patch for it failed (the API
// refuses to change a set CIDR) keeps that one; the subnet reserved for it is free again, as
// kube-controller-manager releases a reservation a node turned out not to need.
func TestReservationANodeDidNotGetIsFreed(t *testing.T) {
	ctx := context.Background()
	c, client, f := newFixture(t, Options{ClusterCIDR: "10.0.0.0/23", NodeMaskSize: 24}, node("n1", ""), node("n2", ""))
	client.PrependReactor("patch", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.PatchAction).GetName() != "n1" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Node"}, "n1",
			field.ErrorList{field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid")})
	})
	if err := c.sync(ctx, "n1"); err == nil {
		t.Fatal("n1's refused patch: no error")
	}
	// The informer now shows the CIDR n1 was given meanwhile: the other of the two.
	if err := f.Core().V1().Nodes().Informer().GetIndexer().Update(node("n1", "10.0.1.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "n2"); err != nil {
		t.Fatalf("n2: %v (the subnet reserved for n1 was not freed)", err)
	}
	if got := podCIDR(t, client, "n2"); got != "10.0.0.0/24" {
		t.Errorf("n2 got %q, want 10.0.0.0/24", got)
	}
}

// A failed patch is tried three times before the sync gives up, and only
// then is CIDRAssignmentFailed recorded, once, as kube-controller-manager's
// range allocator (cidrUpdateRetries) does; a transient failure records
// nothing.
func TestAssignmentRetriedBeforeItFails(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		failures   int
		wantErr    bool
		wantEvents int
	}{{2, false, 0}, {3, true, 1}} {
		c, client, _, recorder := newFixtureWithEvents(t, Options{}, node("n1", ""))
		tries := 0
		client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			tries++
			if tries <= tc.failures {
				return true, nil, apierrors.NewServiceUnavailable("try again")
			}
			return false, nil, nil
		})
		err := c.sync(ctx, "n1")
		if (err != nil) != tc.wantErr {
			t.Errorf("%d failed patches: sync error %v, want error %v", tc.failures, err, tc.wantErr)
		}
		var events []string
		for len(recorder.Events) > 0 {
			events = append(events, <-recorder.Events)
		}
		if len(events) != tc.wantEvents || (tc.wantEvents > 0 && !strings.Contains(events[0], "CIDRAssignmentFailed")) {
			t.Errorf("%d failed patches: events %q, want %d CIDRAssignmentFailed", tc.failures, events, tc.wantEvents)
		}
	}
}

// A node being deleted gives its CIDR back at once, as the range allocator
// does on a deletionTimestamp, not only when the Node object is gone (a
// finalizer may keep it for long).
func TestCIDRReleasedWhenDeletionStarts(t *testing.T) {
	ctx := context.Background()
	doomed := node("n1", "10.0.0.0/25")
	now := metav1.Now()
	doomed.DeletionTimestamp, doomed.Finalizers = &now, []string{"example.com/hold"}
	c, client, _ := newFixture(t, Options{ClusterCIDR: "10.0.0.0/24", NodeMaskSize: 25}, doomed, node("n2", ""), node("n3", ""))
	if err := c.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n2", "n3"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatalf("%s: %v (the deleting node kept its CIDR)", n, err)
		}
	}
	if got := []string{podCIDR(t, client, "n2"), podCIDR(t, client, "n3")}; !slices.Contains(got, "10.0.0.0/25") || !slices.Contains(got, "10.0.0.128/25") {
		t.Errorf("n2, n3 got %q, want the released 10.0.0.0/25 and 10.0.0.128/25", got)
	}
}
