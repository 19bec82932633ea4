package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// The server's controller manager and scheduler share one informer cache
// across leadership terms: after both lose their Leases to another holder
// and win them back (as fresh instances of the same process, on the same
// still-running informers), the controllers and the scheduler work again:
// a scaled-up Deployment gets new pods, bound and Running. The loops
// campaign with the server's --leader-elect-* timing.
func TestControlPlaneLoopsLeadAgainOnTheSharedInformers(t *testing.T) {
	s := startServer(t, "--leader-elect-lease-duration", "8s", "--leader-elect-renew-deadline", "5s", "--leader-elect-retry-period", "1s")
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")
	k.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=2")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")

	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	leases := []string{"skiff-controller-manager", "kube-scheduler"}
	first := map[string]string{}
	for _, name := range leases {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first[name] = *l.Spec.HolderIdentity
		if d := l.Spec.LeaseDurationSeconds; d == nil || *d != 8 {
			t.Errorf("Lease %s lasts %v seconds, want --leader-elect-lease-duration's 8", name, d)
		}
		// Another holder takes the Lease for 15 s: the loop cannot renew,
		// stops at its renew deadline and campaigns again as a new instance.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			thief, d, now := "e2e-thief", int32(15), metav1.NewMicroTime(time.Now())
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &thief, &d, &now, &now
			_, err = cs.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("taking Lease %s: %v", name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range leases {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil {
				return false, nil
			}
			if h := *l.Spec.HolderIdentity; h == "e2e-thief" || h == first[name] || !strings.Contains(h, "_") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the server's loops did not lead again as new instances: %v", err)
	}

	// Both new terms work: the deployment and ReplicaSet controllers add
	// pods, the scheduler binds them, the hollow kubelets run them.
	k.ok("scale", "deploy/web", "--replicas=5")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	out := k.ok("get", "pods", "-l", "app=web", "-o", "wide")
	if n := strings.Count(out, "Running"); n != 5 {
		t.Fatalf("want 5 running pods after the new terms, got %d:\n%s", n, out)
	}
}
