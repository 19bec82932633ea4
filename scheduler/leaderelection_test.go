package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestLeaderElectedSchedulerHoldsTheLeaseAndSchedules(t *testing.T) {
	cs := newFakeClientset(schedtest.MakeNode().Name("n").Capacity("cpu", "1").Obj())
	s, err := scheduler.New(cs, informers.NewSharedInformerFactory(cs, 0), scheduler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- scheduler.RunWithLeaderElection(ctx, cs, s, scheduler.LeaderElection{
			Identity: "sched-a", LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		})
	}()
	waitFor(t, "lease held by sched-a", func() (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "sched-a", err
	})
	createPod(t, cs, schedtest.MakePod().Name("p").Obj())
	waitBound(t, cs, "p")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWithLeaderElection after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunWithLeaderElection did not return after cancel")
	}
}

func TestLeaderElectionNeedsAnIdentity(t *testing.T) {
	cs := newFakeClientset()
	s, err := scheduler.New(cs, informers.NewSharedInformerFactory(cs, 0), scheduler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = scheduler.RunWithLeaderElection(context.Background(), cs, s, scheduler.LeaderElection{})
	if err == nil {
		t.Fatal("want an error without Identity")
	}
	if errors.Is(err, scheduler.ErrLostLeadership) {
		t.Fatalf("wrong error: %v", err)
	}
}
