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
// stops, the standby one takes over.
func TestStandaloneControllerManagerAndScheduler(t *testing.T) {
	s := startServer(t, "--disable-controller-manager", "--disable-scheduler")
	k := newKubectl(t, s, 33)
	caFile := filepath.Join(s.dataDir, "tls", pki.CACertFile)
	cmPorts := []int{freePort(t), freePort(t)}
	schedPort := freePort(t)
	cms := []*process{
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(cmPorts[0]),
			"--root-ca-file", caFile),
		runSkiff(t, 20*time.Second, "controller-manager", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(cmPorts[1])),
	}
	runSkiff(t, 20*time.Second, "scheduler", "--kubeconfig", s.kubeconfig, "--secure-port", strconv.Itoa(schedPort))
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=3")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	if out := k.ok("get", "pods", "-l", "app=web"); strings.Count(out, "Running") != 3 {
		t.Fatalf("want 3 running pods:\n%s", out)
	}
	// Both Leases are held, by the processes: the server runs neither loop.
	eventually(t, k, []string{"skiff-controller-manager", "kube-scheduler"}, "get", "leases", "-n", "kube-system")

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
	for _, port := range append([]int{schedPort}, cmPorts...) {
		contains(t, "healthz", scrape(t, port, "/healthz", ""), "200 ok")
		contains(t, "anonymous metrics", scrape(t, port, "/metrics", ""), "403 ",
			`User \"system:anonymous\" cannot get path \"/metrics\"`)
		contains(t, "process metrics", scrape(t, port, "/metrics", token), "200 ", "process_resident_memory_bytes ", "go_goroutines ")
	}
	contains(t, "scheduler metrics", scrape(t, schedPort, "/metrics", token),
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 3`)
	cmMetrics := scrape(t, cmPorts[0], "/metrics", token) + scrape(t, cmPorts[1], "/metrics", token)
	contains(t, "controller-manager metrics", cmMetrics, `workqueue_adds_total{name="deployment-controller"}`)

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
