package cache_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func node(name string) *v1.Node {
	return schedtest.MakeNode().Name(name).Capacity("cpu", "4", "memory", "8Gi").Obj()
}

func pod(name, nodeName, cpu string) *v1.Pod {
	return schedtest.MakePod().Name(name).Node(nodeName).Req("cpu", cpu).Obj()
}

func requestedCPU(t *testing.T, c *cache.Cache, nodeName string) int64 {
	t.Helper()
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	ni, err := s.Get(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	return ni.Requested.MilliCPU
}

func TestAssumedPodsCountUntilForgotten(t *testing.T) {
	c := cache.New(time.Minute)
	c.AddNode(node("n1"))
	if err := c.AssumePod(pod("a", "n1", "1")); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(pod("b", "n1", "2")); err != nil {
		t.Fatal(err)
	}
	if got := requestedCPU(t, c, "n1"); got != 3000 {
		t.Fatalf("requested after two assumes = %dm, want 3000m", got)
	}
	if err := c.AssumePod(pod("a", "n1", "1")); err == nil {
		t.Fatal("assuming the same pod twice should fail")
	}
	if err := c.ForgetPod(pod("b", "n1", "2")); err != nil {
		t.Fatal(err)
	}
	if got := requestedCPU(t, c, "n1"); got != 1000 {
		t.Fatalf("requested after forget = %dm, want 1000m", got)
	}
	if err := c.ForgetPod(pod("b", "n1", "2")); err == nil {
		t.Fatal("forgetting a pod that is not assumed should fail")
	}
}

func TestInformerConfirmationReplacesTheAssumedPod(t *testing.T) {
	c := cache.New(time.Minute)
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	p := pod("a", "n1", "1")
	if err := c.AssumePod(p); err != nil {
		t.Fatal(err)
	}
	// Another scheduler won the race: the informer reports it on n2.
	c.AddPod(pod("a", "n2", "1"))
	if c.IsAssumedPod(p) {
		t.Fatal("pod should be confirmed, not assumed")
	}
	if got := requestedCPU(t, c, "n1"); got != 0 {
		t.Fatalf("n1 requested = %dm, want 0", got)
	}
	if got := requestedCPU(t, c, "n2"); got != 1000 {
		t.Fatalf("n2 requested = %dm, want 1000m", got)
	}
	c.RemovePod(p)
	if got := requestedCPU(t, c, "n2"); got != 0 {
		t.Fatalf("n2 requested after delete = %dm, want 0", got)
	}
}

func TestUnconfirmedAssumedPodsExpireAfterTheTTL(t *testing.T) {
	now := time.Unix(1000, 0)
	c := cache.New(30 * time.Second)
	cache.SetNow(c, func() time.Time { return now })
	c.AddNode(node("n1"))
	bound, pending := pod("bound", "n1", "1"), pod("pending", "n1", "1")
	for _, p := range []*v1.Pod{bound, pending} {
		if err := c.AssumePod(p); err != nil {
			t.Fatal(err)
		}
	}
	c.FinishBinding(bound)
	now = now.Add(29 * time.Second)
	if n := c.Cleanup(); n != 0 {
		t.Fatalf("expired %d before the TTL", n)
	}
	now = now.Add(2 * time.Second)
	if n := c.Cleanup(); n != 1 {
		t.Fatalf("expired %d, want 1 (only the pod whose bind finished)", n)
	}
	if !c.IsAssumedPod(pending) || c.IsAssumedPod(bound) {
		t.Fatal("wrong pod expired")
	}
	if got := requestedCPU(t, c, "n1"); got != 1000 {
		t.Fatalf("requested = %dm, want 1000m", got)
	}
}

func TestSnapshotCopiesOnlyChangedNodesAndDropsRemovedOnes(t *testing.T) {
	c := cache.New(0)
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	n1Before, _ := s.Get("n1")
	n2Before, _ := s.Get("n2")
	c.AddPod(pod("a", "n2", "1"))
	c.UpdateSnapshot(s)
	n1After, _ := s.Get("n1")
	n2After, _ := s.Get("n2")
	if n1After != n1Before {
		t.Error("unchanged node n1 was copied again")
	}
	if n2After == n2Before || len(n2After.Pods) != 1 || len(n2Before.Pods) != 0 {
		t.Error("changed node n2 was not refreshed, or the old snapshot copy was mutated")
	}
	c.RemoveNode(node("n1"))
	c.UpdateSnapshot(s)
	if len(s.List()) != 1 || s.List()[0].Node().Name != "n2" {
		t.Fatalf("list after removing n1 = %d nodes", len(s.List()))
	}
	if _, err := s.Get("n1"); err == nil {
		t.Fatal("removed node still in snapshot")
	}
}

func TestImageStatesCountNodesHoldingTheImage(t *testing.T) {
	c := cache.New(0)
	c.AddNode(schedtest.MakeNode().Name("n1").Image("nginx:1.27", 100).Obj())
	c.AddNode(schedtest.MakeNode().Name("n2").Image("nginx:1.27", 100).Obj())
	s := cache.NewEmptySnapshot()
	c.UpdateSnapshot(s)
	ni, _ := s.Get("n1")
	if st := ni.ImageStates["nginx:1.27"]; st == nil || st.NumNodes != 2 || st.Size != 100 {
		t.Fatalf("image state = %+v, want size 100 on 2 nodes", st)
	}
}
