package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func init() {
	// The fake tracker's watchers panic once 100 events are unread; a burst of
	// thousands of creates and binds outruns the informer by more than that
	// (the API server would buffer or drop the watcher, not crash).
	watch.DefaultChanSize = 1 << 20
}

// newFakeClientset returns client-go's fake clientset with the pods/binding
// subresource doing what the API server does: the fake alone accepts a
// Binding without changing the pod, so this reactor sets spec.nodeName and
// PodScheduled=True, refusing a pod already bound or with another UID.
//
// It uses the plain object tracker (NewSimpleClientset): NewClientset's
// field-managed tracker rebuilds a REST mapper on every write, which costs
// twenty times more than the scheduler itself and would swamp the benchmark.
func newFakeClientset(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewSimpleClientset(objs...)
	cs.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b, ok := ca.GetObject().(*v1.Binding)
		if !ok {
			return true, nil, fmt.Errorf("binding subresource got %T", ca.GetObject())
		}
		obj, err := cs.Tracker().Get(podsGVR, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if b.UID != "" && b.UID != pod.UID {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), b.Name, fmt.Errorf("UID precondition failed"))
		}
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), b.Name, fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
		if err := cs.Tracker().Update(podsGVR, pod, b.Namespace); err != nil {
			return true, nil, err
		}
		return true, b, nil
	})
	return cs
}

// startScheduler runs a scheduler over cs until the test ends.
func startScheduler(t testing.TB, cs *fake.Clientset, cfg scheduler.Config) *scheduler.Scheduler {
	t.Helper()
	factory := informers.NewSharedInformerFactory(cs, 0)
	if cfg.PodInitialBackoff == 0 {
		cfg.PodInitialBackoff = 10 * time.Millisecond
		cfg.PodMaxBackoff = 50 * time.Millisecond
	}
	s, err := scheduler.New(cs, factory, cfg)
	if err != nil {
		t.Fatalf("scheduler.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})
	return s
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, lastErr)
}

func informersFor(cs *fake.Clientset) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactory(cs, 0)
}
