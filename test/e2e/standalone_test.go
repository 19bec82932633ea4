package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/apiserver/pki"
)

// The controller manager and the scheduler run alone against a server that
// runs neither (`skiff controller-manager`, `skiff scheduler` with a
// kubeconfig): a Deployment on hollow nodes gets its pods created, bound
// and running, deleting it collects them (the garbage collector of a
// controller manager on its own), and when the leading controller manager
// and scheduler stop, the standby ones take over.
func TestStandaloneControllerManagerAndScheduler(t *testing.T) {
	s := startServer(t, "--disable-controller-manager", "--disable-scheduler")
	k := newKubectl(t, s, 33)
	caFile := filepath.Join(s.dataDir, "tls", pki.CACertFile)
	cmPorts := []int{freePort(t), freePort(t)}
	schedPorts := []int{freePort(t), freePort(t)}
	cms := []*process{
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(cmPorts[0]),
			"--root-ca-file", caFile, "--concurrent-deployment-syncs=3"),
		// This one leaves a controller out, as kube-controller-manager --controllers does.
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(cmPorts[1]),
			"--controllers=*,-local-path-provisioner", "--concurrent-deployment-syncs=3"),
	}
	// The schedulers campaign with timing of their own, as kube-scheduler's flags set it;
	// one reads kube-scheduler's configuration file too.
	timing := []string{"--leader-elect-lease-duration", "9s", "--leader-elect-renew-deadline", "6s", "--leader-elect-retry-period", "1s"}
	schedConfig := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte(binPacking), 0o600); err != nil {
		t.Fatal(err)
	}
	scheds := []*process{
		runSkiff(t, 20*time.Second, append([]string{"scheduler", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(schedPorts[0]), "--config", schedConfig}, timing...)...),
		runSkiff(t, 20*time.Second, append([]string{"scheduler", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(schedPorts[1])}, timing...)...),
	}
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=3")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if out := k.ok("get", "pods", "-l", "app=web"); strings.Count(out, "Running") != 3 {
		t.Fatalf("want 3 running pods:\n%s", out)
	}
	// Both Leases are held, by the processes: the server runs neither loop.
	eventually(t, k, []string{"skiff-controller-manager", "kube-scheduler"}, "get", "leases", "-n", "kube-system")
	eventually(t, k, []string{"9|15"}, "get", "leases", "-n", "kube-system", "kube-scheduler", "skiff-controller-manager",
		"-o", `jsonpath={.items[0].spec.leaseDurationSeconds}|{.items[1].spec.leaseDurationSeconds}`)

	// The leader, whichever it is, runs the Deployment controller with the workers asked for.
	if logs := cms[0].log.String() + cms[1].log.String(); !strings.Contains(logs, "controller=deployment-controller workers=3") {
		t.Errorf("no Deployment controller with --concurrent-deployment-syncs=3 workers; the logs:\n%s", logs)
	}
	for i, want := range []bool{true, false} {
		started := cms[i].log.String()
		if !strings.Contains(started, "controller manager starting") || strings.Contains(started, "local-path-provisioner") != want {
			t.Errorf("controller manager %d runs local-path-provisioner: %v, want %v; its log:\n%s", i, !want, want, started)
		}
	}

	// Pods are told the cluster CA (--root-ca-file, or the kubeconfig's).
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, k, []string{strings.TrimSpace(string(ca))}, "get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}")

	// Their metrics, on their own HTTPS ports, for whom RBAC lets get
	// /metrics (a monitoring account here, as for Prometheus); health for
	// anyone, so liveness probes need no token.
	k.ok("create", "serviceaccount", "prometheus")
	k.ok("create", "clusterrolebinding", "prometheus", "--clusterrole=system:monitoring", "--serviceaccount=default:prometheus")
	token := strings.TrimSpace(k.ok("create", "token", "prometheus"))
	for _, port := range append(schedPorts, cmPorts...) {
		contains(t, "healthz", scrape(t, port, "/healthz", ""), "200 ok")
		contains(t, "anonymous metrics", scrape(t, port, "/metrics", ""), "403 ",
			`User \"system:anonymous\" cannot get path \"/metrics\"`)
		contains(t, "process metrics", scrape(t, port, "/metrics", token), "200 ", "process_resident_memory_bytes ", "go_goroutines ")
	}
	contains(t, "scheduler metrics", scrape(t, schedPorts[0], "/metrics", token)+scrape(t, schedPorts[1], "/metrics", token),
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 3`,
		// Its bindings, as its API client counts them.
		`rest_client_requests_total{code="201",host="127.0.0.1:`, `rest_client_request_duration_seconds_bucket{host="127.0.0.1:`)
	cmMetrics := scrape(t, cmPorts[0], "/metrics", token) + scrape(t, cmPorts[1], "/metrics", token)
	contains(t, "controller-manager metrics", cmMetrics, `workqueue_adds_total{name="deployment-controller"}`)

	// Stop whichever controller manager and scheduler lead; the others
	// take over: the scaled Deployment's new pod is created and bound.
	cmLeader, cmStandby := leaderOf(t, "controller manager", cms, "became leader")
	schedLeader, schedStandby := leaderOf(t, "scheduler", scheds, "acquired leader lease")
	cmLeader.stop()
	schedLeader.stop()
	k.ok("scale", "deploy/web", "--replicas=4")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if !strings.Contains(cmStandby.log.String(), "became leader") {
		t.Fatal("the standby controller manager scaled the Deployment without logging that it leads")
	}
	if !strings.Contains(schedStandby.log.String(), "acquired leader lease") {
		t.Fatal("the fourth pod was bound without the standby scheduler logging that it leads")
	}

	k.ok("delete", "deployment", "web")
	waitCount(t, "ReplicaSets of the deleted Deployment", 0, func() int { return rsCount(k, "web") })
	waitCount(t, "pods of the deleted Deployment", 0, func() int { return podCount(k, "web") })
}

// leaderOf waits for one of two instances to log marker (it leads) and
// returns it and the other, which must not have logged it too.
func leaderOf(t *testing.T, what string, procs []*process, marker string) (leader, standby *process) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for i, p := range procs {
			if strings.Contains(p.log.String(), marker) {
				leader, standby = p, procs[1-i]
			}
		}
		if leader != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s became leader", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(standby.log.String(), marker) {
		t.Fatalf("both %ss led at once", what)
	}
	return leader, standby
}

// scrape GETs path from a standalone component's HTTPS port (its
// certificate is self-signed), with token unless empty, and returns the
// status code and body as one string.
func scrape(t *testing.T, port int, path, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s on port %d: %v", path, port, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, body)
}
