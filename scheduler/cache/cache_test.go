package cache_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework"
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

// An incrementally updated snapshot must always equal one built from
// scratch: same nodes in the same order, same pods, same affinity lists,
// through node additions, removals, pod churn with and without affinity,
// and enough changes to compact the cache's change log many times.
func TestIncrementalSnapshotMatchesAFreshOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := cache.New(0)
	s := cache.NewEmptySnapshot()
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var pods []*v1.Pod
	describe := func(list []*framework.NodeInfo) []string {
		var out []string
		for _, ni := range list {
			out = append(out, fmt.Sprintf("%s:%d:%d", ni.Node().Name, len(ni.Pods), ni.Generation))
		}
		return out
	}
	for step := range 5000 {
		name := names[rng.IntN(len(names))]
		switch op := rng.IntN(10); {
		case op == 0:
			c.RemoveNode(node(name))
		case op <= 2:
			c.AddNode(node(name))
		case op <= 7 || len(pods) == 0:
			p := pod(fmt.Sprintf("p%d", step), name, "10m")
			p.UID = types.UID(p.Name)
			if rng.IntN(3) == 0 {
				p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
					TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}}}}
			}
			c.AddPod(p)
			pods = append(pods, p)
		default:
			i := rng.IntN(len(pods))
			c.RemovePod(pods[i])
			pods = slices.Delete(pods, i, i+1)
		}
		if rng.IntN(4) != 0 {
			continue // several changes between scheduling cycles
		}
		c.UpdateSnapshot(s)
		fresh := cache.NewEmptySnapshot()
		c.UpdateSnapshot(fresh)
		for _, l := range []struct {
			what       string
			got, fresh []*framework.NodeInfo
		}{
			{"nodes", s.List(), fresh.List()},
			{"nodes with affinity pods", s.HavePodsWithAffinityList(), fresh.HavePodsWithAffinityList()},
			{"nodes with anti-affinity pods", s.HavePodsWithRequiredAntiAffinityList(), fresh.HavePodsWithRequiredAntiAffinityList()},
		} {
			if got, want := describe(l.got), describe(l.fresh); !slices.Equal(got, want) {
				t.Fatalf("step %d: %s %v, a fresh snapshot has %v", step, l.what, got, want)
			}
		}
		for _, ni := range fresh.List() {
			if got, err := s.Get(ni.Node().Name); err != nil || got.Generation != ni.Generation {
				t.Fatalf("step %d: Get(%s) = %v, %v", step, ni.Node().Name, got, err)
			}
		}
	}
}
