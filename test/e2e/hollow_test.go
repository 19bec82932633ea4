package e2e

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiffkube/skiff/apiserver/pki"
)

// startHollowNodes runs `skiff agent --runtime fake` against s until the test
// ends. Each hollow node joins with the agent token and acts with its own
// node certificate (system:node:<name>), under the node authorizer, as a
// real node does.
func startHollowNodes(t testing.TB, s *server, args ...string) *exec.Cmd {
	t.Helper()
	return runHollowAgent(t, append(joinArgs(t, s, t.TempDir()), args...)...)
}

// joinArgs are the flags of `skiff agent` joining s with its agent token,
// keeping node certificates in certDir.
func joinArgs(t testing.TB, s *server, certDir string) []string {
	t.Helper()
	return []string{"--server", s.url, "--token", agentToken(t, s),
		"--certificate-authority", filepath.Join(s.dataDir, "tls", pki.CACertFile), "--cert-dir", certDir}
}

// agentToken is the agent join token s generated in its data directory.
func agentToken(t testing.TB, s *server) string {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(s.dataDir, "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(token))
}

// startHollowNodesWithKubeconfig runs hollow nodes with the identity of a
// kubeconfig (the test convenience) instead of joining.
func startHollowNodesWithKubeconfig(t testing.TB, kubeconfig string, args ...string) *exec.Cmd {
	t.Helper()
	return runHollowAgent(t, append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func runHollowAgent(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	return runAgent(t, 15*time.Second, append([]string{"--runtime", "fake"}, args...)...)
}

// eventually retries a kubectl command until its output contains every want.
func eventually(t *testing.T, k *kubectl, wants []string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := k.run("", args...)
		ok := err == nil
		for _, w := range wants {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s never showed %q; last output:\n%s", strings.Join(args, " "), wants, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Hollow nodes register, heartbeat, run a pod bound to them and let it go
// when it is deleted, recording the Events a kubelet records — through the
// real API server and kubectl. Each joined with the agent token and acts with its
// own certificate, so the node authorizer keeps it to its own pods.
func TestHollowNodesRunPods(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	certDir := t.TempDir()
	runHollowAgent(t, append(joinArgs(t, s, certDir), "--count", "3", "--node-name", "hollow", "--node-label", "tier=test", "--capacity", "cpu=8,memory=16Gi,pods=50")...)

	// Each node registers on its own; wait until all three report Ready.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out := eventually(t, k, []string{"hollow-0", "hollow-1", "hollow-2"}, "get", "nodes", "-l", "tier=test")
		if strings.Count(out, " Ready ") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want 3 Ready nodes:\n%s", out)
		}
		time.Sleep(250 * time.Millisecond)
	}
	eventually(t, k, []string{"hollow-0", "hollow-2"}, "get", "leases", "-n", "kube-node-lease")
	contains(t, "node capacity", k.ok("get", "node", "hollow-1", "-o", "jsonpath={.status.capacity.cpu} {.status.allocatable.pods} {.status.nodeInfo.containerRuntimeVersion}"), "8 50 fake://")

	// The node IPAM controller (in the server) gives hollow-1 a pod CIDR.
	cidr := eventually(t, k, []string{"10.42."}, "get", "node", "hollow-1", "-o", "jsonpath={.spec.podCIDR}")
	prefix := cidr[:strings.LastIndex(cidr, ".")+1] // "10.42.N."
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeName: hollow-1
  terminationGracePeriodSeconds: 5
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	out := eventually(t, k, []string{"Running", prefix}, "get", "pod", "web", "-o", "wide")
	contains(t, "pod", out, "1/1", "hollow-1")
	events := []string{"get", "events", "--field-selector", "involvedObject.name=web", "-o", "custom-columns=REASON:.reason,FROM:.source.component,NODE:.source.host,MESSAGE:.message"}
	eventually(t, k, []string{`Pulled    kubelet   hollow-1   Container image "example.com/web:1" already present on machine`,
		"Created   kubelet   hollow-1   Created container app", "Started   kubelet   hollow-1   Started container app"}, events...)

	// A gated pod waits, as kubectl shows, until its gates are removed.
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default}
spec:
  schedulingGates: [{name: example.com/admitted}]
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: example.com/web:1}]
`, "apply", "-f", "-")
	contains(t, "gated pod", k.ok("get", "pod", "gated"), "SchedulingGated")
	time.Sleep(time.Second)
	contains(t, "gated pod a second later", k.ok("get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}|{.status.conditions[0].reason}"), "|SchedulingGated")
	// The scheduler's metrics, as kube-scheduler names them, on the server's /metrics.
	contains(t, "scheduler and controller metrics", k.ok("get", "--raw", "/metrics"), `scheduler_pending_pods{queue="gated"} 1`,
		`scheduler_pending_pods{queue="active"} 0`, `workqueue_adds_total{name="nodelifecycle-controller"}`,
		`workqueue_depth{name="endpointslice-controller"}`, `workqueue_work_duration_seconds_bucket{name="nodeipam-controller",le=`,
		// The controllers act with service account tokens.
		"serviceaccount_valid_tokens_total ", "serviceaccount_stale_tokens_total 0",
		// The loops' API clients.
		`rest_client_requests_total{code="201",host=`, `rest_client_rate_limiter_duration_seconds_count{host=`)
	k.ok("patch", "pod", "gated", "--type=json", "-p", `[{"op":"remove","path":"/spec/schedulingGates"}]`)
	eventually(t, k, []string{"Running"}, "get", "pod", "gated")
	contains(t, "scheduler metrics", k.ok("get", "--raw", "/metrics"), `scheduler_pending_pods{queue="gated"} 0`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le=`)
	k.ok("delete", "pod", "gated", "--wait=false")
	// The in-process leaders' watchdogs are part of the server's liveness.
	contains(t, "server liveness", k.ok("get", "--raw", "/livez?verbose"),
		"[+]controller-manager-leader-election ok\n", "[+]scheduler-leader-election ok\n")
	contains(t, "one check", k.ok("get", "--raw", "/readyz/storage"), "ok")
	contains(t, "excluded check", k.ok("get", "--raw", "/healthz?verbose&exclude=storage"), "[+]storage excluded: ok\n")

	// Each node has its own certificate, and with it sees only its pods.
	for _, name := range []string{"hollow-0", "hollow-1", "hollow-2"} {
		if cn := certSubject(t, filepath.Join(certDir, name, "node.crt")); cn != "system:node:"+name {
			t.Fatalf("%s's certificate is for %q", name, cn)
		}
	}
	asNode := func(name string) *kubectl {
		return &kubectl{t: t, bin: k.bin, kc: certKubeconfig(t, s, filepath.Join(certDir, name)), cacheDir: t.TempDir()}
	}
	contains(t, "hollow-1 reads its pod", asNode("hollow-1").ok("get", "pod", "web", "-o", "name"), "pod/web")
	contains(t, "hollow-0 reads hollow-1's pod", asNode("hollow-0").fails("", "get", "pod", "web"),
		`pods "web" is forbidden: User "system:node:hollow-0" cannot get resource "pods"`)

	k.ok("delete", "pod", "web", "--wait", "--timeout=60s")
	if out, _ := k.run("", "get", "pod", "web"); !strings.Contains(out, "NotFound") {
		t.Fatalf("pod still there after delete --wait:\n%s", out)
	}
	eventually(t, k, []string{"Killing   kubelet   hollow-1   Stopping container app"}, events...)
}

// certSubject is the common name of a PEM certificate file.
func certSubject(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Subject.CommonName
}

// certKubeconfig writes a kubeconfig for s using a joined node's
// certificate files in dir.
func certKubeconfig(t *testing.T, s *server, dir string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthority: filepath.Join(dir, "ca.crt")}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(dir, "node.crt"), ClientKey: filepath.Join(dir, "node.key")}
	kc.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "node"}
	kc.CurrentContext = "skiff"
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
