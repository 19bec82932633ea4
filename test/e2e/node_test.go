package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/skiffkube/skiff/kubelet/nodetest"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

const nodeName = "e2e-node"

// startNodeServer runs `skiff server` with its embedded agent on real
// containerd, with the test image in <data-dir>/agent/images, and waits for
// the node to be Ready.
func startNodeServer(t testing.TB) (*server, *kubectl) {
	t.Helper()
	nodetest.RequireContainerd(t)
	dir := t.TempDir()
	images := filepath.Join(dir, "agent", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	testimage.Build(t, images)
	return startNodeServerIn(t, dir, freePort(t))
}

// startNodeServerIn starts (or restarts) a node server on dir; extra are
// more `skiff server` flags.
func startNodeServerIn(t testing.TB, dir string, nodeAPIPort int, extra ...string) (*server, *kubectl) {
	t.Helper()
	s := startServerIn(t, dir, append([]string{"--node-name", nodeName, "--node-api-port", fmt.Sprint(nodeAPIPort)}, extra...)...)
	k := newKubectl(t, s, 33)
	// Runs before the server stops: pods go through the agent, so a failed
	// test leaves no containers running on this machine.
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return // stopped already (restarted): its successor cleans up
		default:
		}
		for _, args := range [][]string{
			{"delete", "deployments,replicasets", "--all", "--timeout=30s"},
			{"delete", "pods", "--all", "--grace-period=1", "--timeout=60s"},
		} {
			if out, err := k.run("", args...); err != nil {
				t.Logf("cleaning up: kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	waitFor(t, k, 60*time.Second, "node Ready", func(out string) bool { return out == "True" },
		"get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	return s, k
}

// waitFor retries a kubectl command until ok accepts its output.
func waitFor(t testing.TB, k *kubectl, timeout time.Duration, what string, ok func(string) bool, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := k.run("", args...)
		out = strings.TrimSpace(out)
		if err == nil && ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last output of kubectl %s:\n%s", what, timeout, strings.Join(args, " "), out)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func podManifest(name, spec string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
%s`, name, spec)
}

// Real pods through the embedded agent, driven by kubectl 1.33: a
// deployment that serves on its pod IP, logs (also of the previous
// container after a liveness restart), exec with exit codes, port-forward,
// CrashLoopBackOff, OOMKilled, a missing image, graceful deletion, and
// nothing left behind.
func TestRealPodsWithEmbeddedAgent(t *testing.T) {
	s, k := startNodeServer(t)

	k.okIn(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: `+testimage.Ref+`
        args: ["serve", ":8080"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
`, "apply", "-f", "-")
	k.ok("rollout", "status", "deployment/web", "--timeout=90s")
	pod := k.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
	ip := k.ok("get", "pod", pod, "-o", "jsonpath={.status.podIP}")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ip + ":8080/healthz")
	if err != nil {
		t.Fatalf("GET the pod on its IP %s: %v", ip, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("pod answered %q", body)
	}

	// Restart safety: a new server process (and agent) on the same data
	// directory adopts the running container instead of restarting it.
	// (Not a subtest: the new server must outlive it.)
	id := k.ok("get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	port := nodeAPIPort(t, k)
	s.stop()
	s, k = startNodeServerIn(t, s.dataDir, port)
	waitFor(t, k, 30*time.Second, "the pod reported again after a server restart", func(out string) bool { return out == id+" 0 true" },
		"get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}")
	if got := k.ok("get", "pod", pod, "-o", "jsonpath={.status.podIP}"); got != ip {
		t.Errorf("pod IP %s after the restart, was %s", got, ip)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ip + ":8080/healthz"); err != nil {
		t.Errorf("the pod stopped answering across the restart: %v", err)
	} else {
		resp.Body.Close()
	}

	t.Run("logs", func(t *testing.T) {
		contains(t, "kubectl logs", k.ok("logs", pod), "serving on :8080")
		contains(t, "kubectl logs deployment", k.ok("logs", "deployment/web", "--timestamps"), "Z serving on :8080")
		out, _ := k.run("", "logs", pod, "--previous")
		contains(t, "kubectl logs --previous without a restart", out, "previous terminated container")
		// -f streams until stopped: what came so far arrives at once.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		follow, _ := exec.CommandContext(ctx, k.bin, "--kubeconfig", k.kc, "--cache-dir", k.cacheDir, "logs", "-f", pod).Output()
		if ctx.Err() == nil {
			t.Errorf("kubectl logs -f of a running container ended by itself: %q", follow)
		}
		contains(t, "kubectl logs -f", string(follow), "serving on :8080")
		contains(t, "kubectl logs --tail", k.ok("logs", pod, "--tail=1", "--since=1h"), "serving on :8080")
		contains(t, "kubectl logs of a bad container", k.fails("", "logs", pod, "-c", "nope"), "container nope is not valid for pod "+pod)
	})

	t.Run("exec", func(t *testing.T) {
		contains(t, "kubectl exec", k.ok("exec", pod, "--", "/app", "echo", "hello", "from", "exec"), "hello from exec")
		out, err := k.run("", "exec", pod, "--", "/app", "crash", "3")
		var exit *exec.ExitError
		if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Errorf("exec of a command exiting 3: err %v, output:\n%s", err, out)
		}
		contains(t, "kubectl exec stdin", k.okIn("piped through\n", "exec", "-i", pod, "--", "/app", "cat"), "piped through")
		// kubectl 1.33 speaks WebSocket v5 (translated to SPDY for the
		// node); 1.27 speaks SPDY, passed straight through.
		old := newKubectl(t, s, 27)
		contains(t, "kubectl 1.27 exec", old.ok("exec", pod, "--", "/app", "echo", "over", "spdy"), "over spdy")
		out, err = old.run("", "exec", pod, "--", "/app", "crash", "4")
		if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 4 {
			t.Errorf("kubectl 1.27 exec of a command exiting 4: err %v, output:\n%s", err, out)
		}
	})

	// In-cluster credentials: the pod's kube-api-access volume (added by
	// ServiceAccount admission) holds a token the agent requested for the
	// pod, the cluster CA from kube-root-ca.crt and the namespace; the
	// token is the default service account's, bound to the pod.
	t.Run("service account token", func(t *testing.T) {
		const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
		if got := k.ok("exec", pod, "--", "/app", "read", dir+"namespace"); got != "default" {
			t.Errorf("namespace file = %q", got)
		}
		ca, err := base64.StdEncoding.DecodeString(k.ok("config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"))
		if err != nil {
			t.Fatal(err)
		}
		if got := k.ok("exec", pod, "--", "/app", "read", dir+"ca.crt"); strings.TrimSpace(got) != strings.TrimSpace(string(ca)) {
			t.Errorf("ca.crt in the pod is not the cluster CA:\n%s", got)
		}
		token := k.ok("exec", pod, "--", "/app", "read", dir+"token")
		// A kubeconfig with only the server, its CA and the pod's token.
		kc := filepath.Join(t.TempDir(), "pod.kubeconfig")
		if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: pod, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: pod}}]
current-context: c
`, s.url, base64.StdEncoding.EncodeToString(ca), token)), 0o600); err != nil {
			t.Fatal(err)
		}
		asPod := &kubectl{t: t, bin: k.bin, kc: kc, cacheDir: t.TempDir()}
		who := asPod.ok("auth", "whoami", "-o", `jsonpath={.status.userInfo.username} {.status.userInfo.extra.authentication\.kubernetes\.io/pod-name[0]} {.status.userInfo.extra.authentication\.kubernetes\.io/node-name[0]}`)
		if want := "system:serviceaccount:default:default " + pod + " " + nodeName; who != want {
			t.Errorf("the pod's token is %q, want %q", who, want)
		}
		// Opting out leaves the directory away.
		k.okIn(podManifest("no-token", `  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
		k.ok("wait", "--for=condition=Ready", "pod/no-token", "--timeout=60s")
		if out, err := k.run("", "exec", "no-token", "--", "/app", "read", dir+"token"); err == nil {
			t.Errorf("a pod with automountServiceAccountToken false reads a token: %q", out)
		}
		k.ok("delete", "pod", "no-token", "--wait=false")

		// A projected token for another audience: the agent asks for the
		// audience its pod's volume names, which NodeRestriction lets a
		// node do (and only that, since 1.33).
		k.okIn(podManifest("vault-token", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
    volumeMounts: [{name: vault, mountPath: /var/run/secrets/vault}]
  volumes:
  - name: vault
    projected:
      sources: [{serviceAccountToken: {audience: vault, path: token}}]
`), "apply", "-f", "-")
		k.ok("wait", "--for=condition=Ready", "pod/vault-token", "--timeout=60s")
		parts := strings.Split(k.ok("exec", "vault-token", "--", "/app", "read", "/var/run/secrets/vault/token"), ".")
		if len(parts) != 3 {
			t.Fatalf("the vault token is not a JWT: %d parts", len(parts))
		}
		claims, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(claims), `"aud":["vault"]`) {
			t.Errorf("the projected token's claims %s, want audience vault", claims)
		}
		k.ok("delete", "pod", "vault-token", "--wait=false")
	})

	t.Run("port-forward", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.bin, "--kubeconfig", k.kc, "--cache-dir", k.cacheDir, "port-forward", "pod/"+pod, ":8080")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+)`)
		sc := bufio.NewScanner(stdout)
		port := ""
		for port == "" && sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				port = m[1]
			}
		}
		if port == "" {
			t.Fatal("kubectl port-forward never said where it listens")
		}
		go io.Copy(io.Discard, stdout)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://127.0.0.1:" + port + "/healthz")
		if err != nil {
			t.Fatalf("through port-forward: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("through port-forward: %q", body)
		}
	})

	// Pods that go wrong in the ways a node must report.
	k.okIn(podManifest("liveness", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
    livenessProbe:
      httpGet: {path: /healthz, port: 9999}
      periodSeconds: 1
      failureThreshold: 2
`), "apply", "-f", "-")
	k.okIn(podManifest("crasher", `  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["crash", "1"]
`), "apply", "-f", "-")
	k.okIn(podManifest("hog", `  restartPolicy: Never
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["hog"]
    resources:
      limits: {memory: 32Mi}
`), "apply", "-f", "-")
	k.okIn(podManifest("missing-image", `  containers:
  - name: app
    image: skiff.test/does-not-exist:v1
`), "apply", "-f", "-")
	pullRef := serveTestImage(t)
	k.okIn(podManifest("pulled", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+pullRef+`
    imagePullPolicy: IfNotPresent
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
	k.okIn(podManifest("unready", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
    readinessProbe:
      exec: {command: ["/app", "not-ready"]}
      periodSeconds: 1
`), "apply", "-f", "-")

	t.Run("liveness restart and logs --previous", func(t *testing.T) {
		waitFor(t, k, 60*time.Second, "a liveness restart", func(out string) bool { return out != "" && out != "0" },
			"get", "pod", "liveness", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		contains(t, "kubectl logs --previous", k.ok("logs", "liveness", "--previous"), "serving on :8080")
	})
	t.Run("CrashLoopBackOff", func(t *testing.T) {
		waitFor(t, k, 60*time.Second, "CrashLoopBackOff", func(out string) bool { return out == "CrashLoopBackOff" },
			"get", "pod", "crasher", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")
		contains(t, "crasher's last state", k.ok("get", "pod", "crasher", "-o", "jsonpath={.status.containerStatuses[0].lastState.terminated.reason} {.status.containerStatuses[0].lastState.terminated.exitCode}"), "Error 1")
	})
	t.Run("OOMKilled", func(t *testing.T) {
		waitFor(t, k, 60*time.Second, "OOMKilled", func(out string) bool { return out == "OOMKilled" },
			"get", "pod", "hog", "-o", "jsonpath={.status.containerStatuses[0].state.terminated.reason}")
	})
	t.Run("missing image", func(t *testing.T) {
		waitFor(t, k, 60*time.Second, "ErrImagePull or ImagePullBackOff", func(out string) bool { return out == "ErrImagePull" || out == "ImagePullBackOff" },
			"get", "pod", "missing-image", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")
		contains(t, "kubectl logs of a container that never started", k.fails("", "logs", "missing-image"), `container "app" in pod "missing-image" is waiting to start`)
	})

	// The Events `kubectl describe pod` shows on Kubernetes, with the
	// kubelet's reasons and message shapes, read back through the API.
	t.Run("events", func(t *testing.T) {
		want := map[string][]string{
			pod: {`Normal Pulled spec.containers{app} Container image "` + testimage.Ref + `" already present on machine`,
				"Normal Created spec.containers{app} Created container app", "Normal Started spec.containers{app} Started container app"},
			"liveness": {"Warning Unhealthy spec.containers{app} Liveness probe failed: Get \"http://",
				"Normal Killing spec.containers{app} Container app failed liveness probe, will be restarted"},
			"unready": {`Warning Unhealthy spec.containers{app} Readiness probe failed: unknown mode "not-ready"`},
			"pulled": {`Normal Pulling spec.containers{app} Pulling image "` + pullRef + `"`,
				`Normal Pulled spec.containers{app} Successfully pulled image "` + pullRef + `" in `},
			"hog":     {"Warning OOMKilled spec.containers{app} Container app was OOMKilled (exit code 137): it used more than its memory limit of 32Mi"},
			"crasher": {"Warning BackOff spec.containers{app} Back-off restarting failed container app in pod crasher_default("},
			"missing-image": {`Warning Failed spec.containers{app} Failed to pull image "skiff.test/does-not-exist:v1": `,
				`Normal BackOff spec.containers{app} Back-off pulling image "skiff.test/does-not-exist:v1"`},
		}
		for p, lines := range want {
			waitFor(t, k, 60*time.Second, "events of "+p, func(out string) bool {
				for _, l := range lines {
					if !strings.Contains(out, l) {
						return false
					}
				}
				return true
			}, "get", "events", "--field-selector", "involvedObject.name="+p, "-o",
				`jsonpath={range .items[*]}{.type} {.reason} {.involvedObject.fieldPath} {.message}{"\n"}{end}`)
		}
		// What a user reads: describe lists them with the kubelet as source.
		desc := k.ok("describe", "pod", "liveness")
		for _, w := range []string{"Liveness probe failed:", "Container app failed liveness probe, will be restarted", "kubelet"} {
			contains(t, "kubectl describe pod liveness", desc, w)
		}
	})

	// The Job controller hands each indexed pod JOB_COMPLETION_INDEX as a
	// fieldRef to its completion-index annotation; the agent resolves it.
	t.Run("indexed job pods know their index", func(t *testing.T) {
		k.okIn(`apiVersion: batch/v1
kind: Job
metadata:
  name: indexed
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: app
        image: `+testimage.Ref+`
        args: ["env"]
`, "apply", "-f", "-")
		k.ok("wait", "--for=condition=complete", "job/indexed", "--timeout=90s")
		for _, i := range []string{"0", "1"} {
			pod := k.ok("get", "pods", "-l", "batch.kubernetes.io/job-completion-index="+i, "-o", "jsonpath={.items[0].metadata.name}")
			contains(t, "env of index "+i, k.ok("logs", pod), "JOB_COMPLETION_INDEX="+i)
			if h := k.ok("get", "pod", pod, "-o", "jsonpath={.spec.hostname}"); h != "indexed-"+i {
				t.Errorf("pod %s has hostname %q, want indexed-%s", pod, h, i)
			}
		}
		k.ok("delete", "job", "indexed", "--timeout=60s")
	})

	t.Run("graceful deletion sends SIGTERM first", func(t *testing.T) {
		// serve exits on SIGTERM: deleting it with a long grace period
		// returns long before the period. block ignores SIGTERM: it goes
		// only when the grace period ends with SIGKILL.
		k.okIn(podManifest("term", `  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
		k.okIn(podManifest("stubborn", `  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["block"]
`), "apply", "-f", "-")
		for _, p := range []string{"term", "stubborn"} {
			waitFor(t, k, 60*time.Second, p+" running", func(out string) bool { return out == "Running" }, "get", "pod", p, "-o", "jsonpath={.status.phase}")
		}
		// kubectl attach (WebSocket v5, translated) shows what the
		// container says from now on: here, that SIGTERM came.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		attach := exec.CommandContext(ctx, k.bin, "--kubeconfig", k.kc, "--cache-dir", k.cacheDir, "attach", "term")
		var attached lockedWriter
		attached.w = &strings.Builder{}
		attach.Stdout, attach.Stderr = &attached, &attached
		if err := attach.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // attached
		start := time.Now()
		k.ok("delete", "pod", "term", "--grace-period=30", "--timeout=60s")
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("deleting a pod that exits on SIGTERM took %v of its 30s grace period", d)
		}
		_ = attach.Wait()
		contains(t, "kubectl attach", attached.String(), "got terminated, shutting down")
		start = time.Now()
		k.ok("delete", "pod", "stubborn", "--grace-period=3", "--timeout=60s")
		if d := time.Since(start); d < 3*time.Second {
			t.Errorf("a pod ignoring SIGTERM went in %v, before its 3s grace period ended", d)
		}
	})

	// As the kubelet, the agent writes how a deleted pod's containers ended
	// before the pod goes: a finalizer keeps it here to be read.
	t.Run("a deleted pod's final status", func(t *testing.T) {
		k.okIn(`apiVersion: v1
kind: Pod
metadata:
  name: last-words
  finalizers: [skiff.test/keep]
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["sleep", "3"]
`, "apply", "-f", "-")
		waitFor(t, k, 60*time.Second, "last-words running", func(out string) bool { return out == "Running" }, "get", "pod", "last-words", "-o", "jsonpath={.status.phase}")
		k.ok("delete", "pod", "last-words", "--wait=false")
		waitFor(t, k, 60*time.Second, "last-words Failed with its own exit code", func(out string) bool { return out == "Failed 3 Error False" },
			"get", "pod", "last-words", "-o", `jsonpath={.status.phase} {.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason} {.status.conditions[?(@.type=="Ready")].status}`)
		k.ok("patch", "pod", "last-words", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		waitFor(t, k, 60*time.Second, "last-words gone", func(out string) bool { return out == "" }, "get", "pods", "--field-selector=metadata.name=last-words", "-o", "name")
	})

	t.Run("nothing left after deleting everything", func(t *testing.T) {
		// skiff has no garbage collector yet: scale to zero, then the
		// deployment and its ReplicaSet go explicitly.
		k.ok("scale", "deployment", "web", "--replicas=0")
		k.ok("delete", "deployment", "web", "--timeout=30s")
		k.ok("delete", "replicasets", "-l", "app=web", "--timeout=30s")
		k.ok("delete", "pods", "--all", "--grace-period=1", "--timeout=90s")
		waitFor(t, k, 60*time.Second, "no pods", func(out string) bool { return out == "" }, "get", "pods", "-o", "name")
		deadline := time.Now().Add(30 * time.Second)
		for {
			left := leftovers(t)
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("left behind after every pod is gone:\n%s", left)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// serveTestImage serves the test image from a registry on 127.0.0.1 (an
// in-memory OCI distribution registry; containerd speaks plain HTTP to
// localhost) and returns its reference there, which containerd does not
// have under that name: a pod using it makes the agent pull. The image
// must be in containerd already (the agent imported it).
func serveTestImage(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	ref := l.Addr().String() + "/skiff/testapp:v1"
	ctr := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ctr", append([]string{"--namespace", "skiff", "images"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ctr images %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ctr("tag", "--force", testimage.Ref, ref)
	ctr("push", "--plain-http", ref)
	ctr("rm", ref)
	t.Cleanup(func() { _ = exec.Command("ctr", "--namespace", "skiff", "images", "rm", ref).Run() })
	return ref
}

// leftovers lists skiff's network namespaces, containerd containers and
// containerd shims.
func leftovers(t testing.TB) string {
	t.Helper()
	var left []string
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "skiff-") {
			left = append(left, "netns "+e.Name())
		}
	}
	out, err := exec.Command("ctr", "--namespace", "skiff", "containers", "list", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("ctr containers list: %v\n%s", err, out)
	}
	for _, id := range strings.Fields(string(out)) {
		left = append(left, "container "+id)
	}
	// A shim outliving its task serves nothing and would run forever.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && args[1] == "-namespace" && args[2] == "skiff" {
			left = append(left, "shim "+strings.Join(args, " "))
		}
	}
	return strings.Join(left, "\n")
}

// Without containerd the embedded agent's node registers but is NotReady
// and says why; the rest of the server works.
func TestNodeNotReadyWithoutContainerd(t *testing.T) {
	s := startServerIn(t, t.TempDir(), "--node-name", nodeName, "--node-api-port", fmt.Sprint(freePort(t)),
		"--containerd-socket", "/nonexistent/containerd.sock")
	k := newKubectl(t, s, 33)
	waitFor(t, k, 60*time.Second, "NotReady with the reason", func(out string) bool {
		return strings.HasPrefix(out, "False ") && strings.Contains(out, "containerd socket /nonexistent/containerd.sock not found")
	}, "get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
}

// A server stopped with SIGTERM cordons its embedded agent's node before
// its API server goes away: started again without an agent (which would
// lift its own shutdown cordon), the stored Node is unschedulable and marked
// as cordoned by the agent. No containerd is needed for this.
func TestServerShutdownCordonsItsNode(t *testing.T) {
	dir := t.TempDir()
	s := startServerIn(t, dir, "--node-name", nodeName, "--node-api-port", fmt.Sprint(freePort(t)),
		"--containerd-socket", "/nonexistent/containerd.sock")
	k := newKubectl(t, s, 33)
	// Registered with its status (NotReady: no containerd) and schedulable.
	waitFor(t, k, 60*time.Second, "the node registered and schedulable", func(out string) bool { return out == "False" },
		"get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}{.spec.unschedulable}`)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit within 30s of SIGTERM:\n%s", s.log.String())
	}
	if log := s.log.String(); strings.Contains(log, "marking node unschedulable at shutdown failed") {
		t.Errorf("the agent could not cordon its node at shutdown:\n%s", log)
	}
	s2 := startServerIn(t, dir, "--disable-agent")
	k2 := newKubectl(t, s2, 33)
	got := k2.ok("get", "node", nodeName, "-o", `jsonpath={.spec.unschedulable} {.metadata.annotations.skiff\.io/cordoned-at-shutdown}`)
	if got != "true true" {
		t.Errorf("after a SIGTERM shutdown the node reads unschedulable/annotation %q, want \"true true\"", got)
	}
}

// nodeAPIPort is the port the node reports for its API.
func nodeAPIPort(t testing.TB, k *kubectl) int {
	t.Helper()
	out := k.ok("get", "node", nodeName, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}")
	var port int
	if _, err := fmt.Sscan(out, &port); err != nil {
		t.Fatalf("node API port %q: %v", out, err)
	}
	return port
}

// `skiff agent --runtime containerd` is the same node agent against a
// server started without one: it registers, waits for its pod CIDR, runs a
// pod that answers on its IP, and goes away leaving nothing behind.
func TestStandaloneContainerdAgent(t *testing.T) {
	nodetest.RequireContainerd(t)
	s := startServer(t) // --disable-agent
	k := newKubectl(t, s, 33)
	dir := t.TempDir()
	images := filepath.Join(dir, "agent", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	testimage.Build(t, images)
	runAgent(t, 20*time.Second, "--runtime", "containerd", "--kubeconfig", s.kubeconfig, "--node-name", "standalone",
		"--data-dir", dir, "--node-ip", "127.0.0.1", "--node-api-address", "127.0.0.1", "--node-api-port", fmt.Sprint(freePort(t)))
	t.Cleanup(func() {
		if out, err := k.run("", "delete", "pods", "--all", "--grace-period=1", "--timeout=60s"); err != nil {
			t.Logf("cleaning up: %v\n%s", err, out)
		}
	})
	waitFor(t, k, 60*time.Second, "standalone node Ready", func(out string) bool { return out == "True" },
		"get", "node", "standalone", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	k.okIn(podManifest("solo", `  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
	ip := waitFor(t, k, 60*time.Second, "solo running", func(out string) bool { return strings.HasPrefix(out, "Running ") },
		"get", "pod", "solo", "-o", "jsonpath={.status.phase} {.status.podIP}")
	ip = strings.TrimPrefix(ip, "Running ")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ip + ":8080/healthz")
	if err != nil {
		t.Fatalf("GET the pod on %s: %v", ip, err)
	}
	resp.Body.Close()
	// Its node API serves a self-signed certificate (no --tls-cert-file):
	// the API server refuses to trust it, and says so.
	contains(t, "logs from an untrusted node", k.fails("", "logs", "solo"), "certificate")
	k.ok("delete", "pod", "solo", "--grace-period=1", "--timeout=60s")
	deadline := time.Now().Add(30 * time.Second)
	for left := leftovers(t); left != ""; left = leftovers(t) {
		if time.Now().After(deadline) {
			t.Fatalf("left behind:\n%s", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lockedWriter collects a child's output for the failure log.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
