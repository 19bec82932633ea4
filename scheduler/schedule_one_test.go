package scheduler

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// TestAFailedBindIsRetriedAfterItsBackoff: as kube-scheduler v1.33
// (kubernetes#130189), a pod whose bind fails goes back to backoff, to be
// retried once it ends, rather than wait among the unschedulable for a
// cluster event: the failure says nothing about the cluster, and the queue
// let go of the pod, with the events of its attempt, when it was assumed.
func TestAFailedBindIsRetriedAfterItsBackoff(t *testing.T) {
	pod := schedtest.MakePod().Name("p").UID("p").Req("cpu", "1").Obj()
	s, cs := newAttemptTestScheduler(t, pod)
	s.onNodeAdd(schedtest.MakeNode().Name("n").Capacity("cpu", "2", "pods", "10").Obj())
	s.onPodAdd(pod)
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		return true, nil, errors.New("the API server is having a bad day")
	})
	got := attempt(t, s, cs, "p")
	if active, backoff, unschedulable, _ := s.queue.Lengths(); backoff != 1 || active+unschedulable != 0 {
		t.Fatalf("active %d backoff %d unschedulable %d, want the pod in backoff", active, backoff, unschedulable)
	}
	if c := podScheduled(got); c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonSchedulerError {
		t.Errorf("PodScheduled = %+v, want False, %s", c, v1.PodReasonSchedulerError)
	}
	if s.cache.IsAssumedPod(pod) {
		t.Error("the pod whose bind failed is still assumed")
	}
}
