package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler/framework"
	fwruntime "github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins"
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

// erringFilter is a Filter plugin that fails with an error on one node.
type erringFilter struct{ node string }

func (erringFilter) Name() string { return "Erring" }
func (p erringFilter) Filter(_ context.Context, _ *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if ni.NodeName() == p.node {
		return framework.AsStatus(errors.New("lost its marbles"))
	}
	return nil
}

// TestAFilterErrorIsLoggedWithItsNode: a Filter plugin's error reads in
// the pod's condition as kube-scheduler's, `running "X" filter plugin: …`,
// without the node; the scheduler's log line for the failed attempt names
// the node it happened on, whether it was the pod's nominated node (tried
// first) or one of the others.
func TestAFilterErrorIsLoggedWithItsNode(t *testing.T) {
	for _, nominated := range []bool{false, true} {
		t.Run(fmt.Sprintf("nominated=%v", nominated), func(t *testing.T) {
			pod := schedtest.MakePod().Name("p").UID("p").Req("cpu", "1").Obj()
			if nominated {
				pod.Status.NominatedNodeName = "n1"
			}
			cs := fake.NewSimpleClientset(pod)
			factory := informers.NewSharedInformerFactory(cs, 0)
			var logs bytes.Buffer
			var mu sync.Mutex
			s, err := New(cs, factory, Config{
				Logger:   slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)),
				Registry: fwruntime.Registry{"Erring": func(any, framework.Handle) (framework.Plugin, error) { return erringFilter{node: "n1"}, nil }},
				Plugins:  append(plugins.DefaultProfile(""), fwruntime.PluginConfig{Name: "Erring"}),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"n0", "n1", "n2"} {
				s.onNodeAdd(schedtest.MakeNode().Name(n).Capacity("cpu", "2", "pods", "10").Obj())
			}
			s.onPodAdd(pod)
			got := attempt(t, s, cs, "p")
			want := `running "Erring" filter plugin: lost its marbles`
			if c := podScheduled(got); c == nil || c.Reason != v1.PodReasonSchedulerError || c.Message != want {
				t.Errorf("PodScheduled = %+v, want %s with message %q", c, v1.PodReasonSchedulerError, want)
			}
			mu.Lock()
			defer mu.Unlock()
			line := ""
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "scheduling attempt failed") {
					line = l
				}
			}
			if !strings.Contains(line, "node=n1") || !strings.Contains(line, "pod=default/p") || !strings.Contains(line, "lost its marbles") {
				t.Errorf("log line %q, want the pod, node=n1 and the error", line)
			}
		})
	}
}

// lockedWriter serializes writes to w (the scheduler logs from several goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
