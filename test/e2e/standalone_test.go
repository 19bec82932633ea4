package e2e

import (
	"strings"
	"testing"
	"time"
)

// The controller manager and the scheduler run alone against a server that
// runs neither (`skiff controller-manager`, `skiff scheduler` with a
// kubeconfig): a Deployment on hollow nodes gets its pods created, bound
// and running, deleting it collects them (the garbage collector of a
// controller manager on its own), and when the leading controller manager
// stops, the standby one takes over.
func TestStandaloneControllerManagerAndScheduler(t *testing.T) {
	s := startServer(t, "--disable-controller-manager", "--disable-scheduler")
	k := newKubectl(t, s, 33)
	cms := []*process{
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig),
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig),
	}
	runSkiff(t, 20*time.Second, "scheduler", "--kubeconfig", s.kubeconfig)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=3")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if out := k.ok("get", "pods", "-l", "app=web"); strings.Count(out, "Running") != 3 {
		t.Fatalf("want 3 running pods:\n%s", out)
	}
	// Both Leases are held, by the processes: the server runs neither loop.
	eventually(t, k, []string{"skiff-controller-manager", "kube-scheduler"}, "get", "leases", "-n", "kube-system")

	// Stop whichever controller manager leads; the other takes over.
	leader, standby := -1, -1
	deadline := time.Now().Add(30 * time.Second)
	for leader < 0 {
		for i, p := range cms {
			if strings.Contains(p.log.String(), "became leader") {
				leader, standby = i, 1-i
			}
		}
		if leader < 0 && time.Now().After(deadline) {
			t.Fatal("no controller manager became leader")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(cms[standby].log.String(), "became leader") {
		t.Fatal("both controller managers led at once")
	}
	cms[leader].stop()
	k.ok("scale", "deploy/web", "--replicas=4")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if !strings.Contains(cms[standby].log.String(), "became leader") {
		t.Fatal("the standby controller manager scaled the Deployment without logging that it leads")
	}

	k.ok("delete", "deployment", "web")
	waitCount(t, "ReplicaSets of the deleted Deployment", 0, func() int { return rsCount(k, "web") })
	waitCount(t, "pods of the deleted Deployment", 0, func() int { return podCount(k, "web") })
}
