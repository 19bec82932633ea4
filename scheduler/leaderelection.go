package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// DefaultLeaseName is the Lease in kube-system the scheduler campaigns for
// unless LeaderElection.Name says otherwise, kube-scheduler's.
const DefaultLeaseName = "kube-scheduler"

// LeaderElection configures the Lease that keeps one scheduler active.
// Zero durations take kube-scheduler's defaults (15s, 10s, 2s).
type LeaderElection struct {
	// Identity names this instance in the Lease's holderIdentity; required.
	Identity string
	// Namespace and Name of the Lease; default kube-system/kube-scheduler.
	Namespace string
	Name      string

	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// WatchDog, if set, watches this instance's leadership for a health
	// check: it fails once the instance leads but stopped renewing.
	WatchDog *leaderelection.HealthzAdaptor
}

// ErrLostLeadership is returned when another instance took the Lease while
// this one was scheduling; the caller should exit (a Scheduler runs once) and
// be restarted, as kube-scheduler does.
var ErrLostLeadership = errors.New("scheduler: lost the leader lease")

// RunWithLeaderElection waits to acquire the Lease, runs sched while it holds
// it, and releases it when ctx is cancelled. It returns nil after a clean
// shutdown and ErrLostLeadership if the lease was lost.
func RunWithLeaderElection(ctx context.Context, clientset kubernetes.Interface, sched *Scheduler, le LeaderElection) error {
	if sched == nil || clientset == nil {
		return errors.New("scheduler: leader election needs a clientset and a scheduler")
	}
	if le.Identity == "" {
		return errors.New("scheduler: leader election needs an Identity")
	}
	if le.Namespace == "" {
		le.Namespace = metav1.NamespaceSystem
	}
	if le.Name == "" {
		le.Name = DefaultLeaseName
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		clientset.CoreV1(), clientset.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return fmt.Errorf("scheduler: lease lock: %w", err)
	}
	runErr := make(chan error, 1)
	started := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.Name,
		WatchDog:        le.WatchDog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				close(started)
				sched.log.Info("acquired leader lease", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
				runErr <- sched.Run(leadCtx)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("scheduler: leader election: %w", err)
	}
	elector.Run(ctx)
	select {
	case <-started:
	default:
		// Never led: ctx ended while waiting for the lease.
		return nil
	}
	// Run cancels the leading context on return, so the scheduler stops too.
	if err := <-runErr; err != nil {
		return err
	}
	if ctx.Err() == nil {
		return ErrLostLeadership
	}
	return nil
}
