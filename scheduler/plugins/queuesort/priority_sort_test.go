package queuesort

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's TestLess: the higher priority first, then
// the pod queued earlier; a pod without a priority counts as 0.
func TestLess(t *testing.T) {
	var _ framework.QueueSortPlugin = &PrioritySort{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	pod := func(priority *int32) *v1.Pod {
		w := schedtest.MakePod().Name("p")
		if priority != nil {
			w.Priority(*priority)
		}
		return w.Obj()
	}
	low, high, zero := int32(1), int32(100), int32(0)
	pl := &PrioritySort{}
	for _, c := range []struct {
		name   string
		p1     *v1.Pod
		t1     time.Time
		p2     *v1.Pod
		t2     time.Time
		before bool
	}{
		{"a higher priority goes first", pod(&high), t1, pod(&low), t0, true},
		{"a lower priority goes after", pod(&low), t0, pod(&high), t1, false},
		{"equal priorities: the earlier queued goes first", pod(&low), t0, pod(&low), t1, true},
		{"equal priorities: the later queued goes after", pod(&low), t1, pod(&low), t0, false},
		{"equal priorities and times: neither goes first", pod(&low), t0, pod(&low), t0, false},
		{"no priority is priority 0", pod(nil), t0, pod(&zero), t1, true},
		{"no priority goes after a positive one", pod(nil), t0, pod(&low), t1, false},
	} {
		if got := pl.Less(c.p1, c.t1, c.p2, c.t2); got != c.before {
			t.Errorf("%s: Less = %v, want %v", c.name, got, c.before)
		}
	}
}
