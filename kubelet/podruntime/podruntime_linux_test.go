//go:build linux

package podruntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/logs"
	"github.com/skiffkube/skiff/kubelet/network"
	"github.com/skiffkube/skiff/kubelet/nodeapi"
	"github.com/skiffkube/skiff/kubelet/nodetest"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
	"github.com/skiffkube/skiff/kubelet/runtime/containerd"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

const waitLong = 3 * time.Minute

// clock is a settable clock for back-off decisions.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

type env struct {
	rt    *Runtime
	ctr   *containerd.Runtime
	nets  *network.Manager
	clock *clock
	logs  string
	pods  string
	objs  *objectStore
}

func newEnv(t testing.TB, bridge, cidr string) *env {
	t.Helper()
	socket := nodetest.RequireContainerd(t)
	ctx := context.Background()
	build := t.TempDir()
	ctr, err := containerd.New(ctx, containerd.Config{Socket: socket, Namespace: "skiff-test-pods", CgroupRoot: "/skiff-test-pods", LogDriver: testimage.BuildLogDriver(t, build)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Close() })
	tarPath, _ := testimage.Build(t, build)
	if _, err := ctr.ImportImages(ctx, tarPath); err != nil {
		t.Fatal(err)
	}
	nets, err := network.New(network.Config{PodCIDR: cidr, StateDir: t.TempDir(), Bridge: bridge, NetnsPrefix: "skifftest-"})
	if err != nil {
		t.Fatal(err)
	}
	if err := nets.EnsureBridge(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nets.RemoveBridge(context.Background()) })
	e := &env{ctr: ctr, nets: nets, clock: &clock{}, logs: t.TempDir(), pods: t.TempDir(), objs: newObjectStore()}
	e.rt, err = New(Config{Containers: ctr, Network: nets, PodDir: e.pods, LogDir: e.logs, Now: e.clock.now, Objects: e.objs})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func newTestPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "node-test", RestartPolicy: corev1.RestartPolicyAlways},
	}
}

func appContainer(name string, args ...string) corev1.Container {
	return corev1.Container{Name: name, Image: testimage.Ref, ImagePullPolicy: corev1.PullNever, Args: args}
}

// syncUntil calls SyncPod until cond holds for the state.
func (e *env) syncUntil(t *testing.T, pod *corev1.Pod, ip string, what string, cond func(agent.PodState) bool) agent.PodState {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		st, err := e.rt.SyncPod(context.Background(), pod, ip)
		if err != nil {
			t.Fatal(err)
		}
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %v; last state %+v", what, waitLong, st)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (e *env) assertGone(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	list, err := e.ctr.ListContainers(context.Background(), krt.ListFilter{PodUID: string(pod.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("containers left: %+v", list)
	}
	if e.ctr.PodCgroupExists(string(pod.UID)) {
		t.Error("pod cgroup left")
	}
	if got, _ := e.nets.Get(string(pod.UID)); got != nil {
		t.Errorf("pod address still held: %s", got.IP)
	}
	for _, p := range []string{"/var/run/netns/skifftest-" + string(pod.UID), filepath.Join(e.pods, string(pod.UID)),
		filepath.Join(e.logs, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left (stat err %v)", p, err)
		}
	}
}

func TestPodWithInitContainerServesOnItsIPAndIsKilledCleanly(t *testing.T) {
	e := newEnv(t, "sktpod0", "10.251.30.0/24")
	pod := newTestPod("web")
	pod.Spec.InitContainers = []corev1.Container{appContainer("init", "echo", "initialised")}
	web := appContainer("web", "serve", ":$(PORT)")
	web.Env = []corev1.EnvVar{{Name: "PORT", Value: "8080"},
		{Name: "MY_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	web.Resources.Limits = corev1.ResourceList{}
	pod.Spec.Containers = []corev1.Container{web}
	pod.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	const ip = "10.251.30.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	st := e.syncUntil(t, pod, ip, "web running", func(s agent.PodState) bool {
		return len(s.Containers) == 1 && s.Containers[0].State.Running != nil
	})
	if it := st.InitContainers[0].State.Terminated; it == nil || it.ExitCode != 0 || it.Reason != krt.ReasonCompleted {
		t.Errorf("init container: %+v", st.InitContainers[0].State)
	}
	if c := st.Containers[0]; !c.Ready || !strings.HasPrefix(c.ContainerID, "containerd://") || c.ImageID == "" || c.RestartCount != 0 {
		t.Errorf("web status: %+v", c)
	}

	var body []byte
	deadline := time.Now().Add(waitLong)
	for {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + ip + ":8080/healthz")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod IP never answered: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if strings.TrimSpace(string(body)) != "ok" {
		t.Errorf("healthz = %q", body)
	}
	// Another sync changes nothing: the same container keeps running.
	again, err := e.rt.SyncPod(context.Background(), pod, ip)
	if err != nil {
		t.Fatal(err)
	}
	if again.Containers[0].ContainerID != st.Containers[0].ContainerID {
		t.Errorf("resync replaced the container: %s → %s", st.Containers[0].ContainerID, again.Containers[0].ContainerID)
	}

	if err := e.rt.KillPod(context.Background(), pod, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, pod)
}

func TestCrashingContainerBacksOffAndKeepsThePreviousAttempt(t *testing.T) {
	e := newEnv(t, "sktpod1", "10.251.31.0/24")
	pod := newTestPod("crasher")
	pod.Spec.Containers = []corev1.Container{appContainer("c", "crash", "4")}
	const ip = "10.251.31.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	// The first crash is restarted at once, as the kubelet restarts it
	// (the clock does not move): attempt 1, no back-off …
	st := e.syncUntil(t, pod, ip, "first crash restarted", func(s agent.PodState) bool {
		return s.Containers[0].RestartCount > 0 || s.Containers[0].State.Waiting != nil
	})
	c := st.Containers[0]
	if c.RestartCount != 1 || c.State.Waiting != nil || st.RecheckAfter != 0 {
		t.Fatalf("after the first crash: %d restarts, state %+v, RecheckAfter %v; want attempt 1 started at once", c.RestartCount, c.State, st.RecheckAfter)
	}
	if lt := c.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 4 || lt.Reason != krt.ReasonError {
		t.Errorf("lastState = %+v, want exit 4 Error", c.LastTerminationState)
	}

	// … the second waits 10s …
	st = e.syncUntil(t, pod, ip, "second crash in back-off", func(s agent.PodState) bool {
		w := s.Containers[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	c = st.Containers[0]
	if c.RestartCount != 1 || !strings.Contains(c.State.Waiting.Message, "back-off 10s") {
		t.Errorf("second crash: %d restarts, back-off message %q, want 1 and 10s", c.RestartCount, c.State.Waiting.Message)
	}
	if lt := c.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 4 || lt.Reason != krt.ReasonError {
		t.Errorf("lastState = %+v, want exit 4 Error", c.LastTerminationState)
	}

	// … then the container runs again as attempt 2 and the next
	// back-off doubles.
	e.clock.advance(11 * time.Second)
	st = e.syncUntil(t, pod, ip, "third crash in back-off", func(s agent.PodState) bool {
		w := s.Containers[0].State.Waiting
		return s.Containers[0].RestartCount == 2 && w != nil && w.Reason == "CrashLoopBackOff"
	})
	if msg := st.Containers[0].State.Waiting.Message; !strings.Contains(msg, "back-off 20s") {
		t.Errorf("third back-off message %q, want 20s", msg)
	}
	// The last two attempts' logs exist: `kubectl logs --previous` reads
	// attempt 1.
	for _, attempt := range []string{"1.log", "2.log"} {
		b, err := os.ReadFile(filepath.Join(e.logs, "default_crasher_uid-crasher", "c", attempt))
		if err != nil || !strings.Contains(string(b), "crashing with exit code 4") {
			t.Errorf("log %s: %q (%v)", attempt, b, err)
		}
	}
	// The node API finds them the same way.
	cur, err := e.rt.ContainerLog(context.Background(), "default", "crasher", "c", false)
	if err != nil || filepath.Base(cur.Path) != "2.log" {
		t.Errorf("current log %+v (%v), want attempt 2", cur, err)
	}
	prev, err := e.rt.ContainerLog(context.Background(), "default", "crasher", "c", true)
	if err != nil || filepath.Base(prev.Path) != "1.log" || prev.Running() {
		t.Errorf("previous log %+v (%v), want attempt 1, not running", prev, err)
	}
	if _, err := e.rt.ContainerLog(context.Background(), "default", "crasher", "nope", false); !errors.Is(err, logs.ErrNotFound) {
		t.Errorf("unknown container: %v, want logs.ErrNotFound", err)
	}
	if err := e.rt.KillPod(context.Background(), pod, 0); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, pod)
}

func TestBadSpecsAreReportedAsWaitingReasons(t *testing.T) {
	e := newEnv(t, "sktpod2", "10.251.32.0/24")
	pod := newTestPod("bad")
	missing := appContainer("missing")
	missing.Image = "skiff.test/absent:v1"
	secretEnv := appContainer("secretenv", "sleep")
	secretEnv.Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
	pod.Spec.Containers = []corev1.Container{missing, secretEnv}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
	st, err := e.rt.SyncPod(context.Background(), pod, "10.251.32.9")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ErrImageNeverPull", "CreateContainerConfigError"} {
		w := st.Containers[i].State.Waiting
		if w == nil || w.Reason != want || w.Message == "" {
			t.Errorf("%s: state %+v, want waiting %s", st.Containers[i].Name, st.Containers[i].State, want)
		}
	}
	// An image that cannot be pulled: ErrImagePull, then ImagePullBackOff
	// without another pull until the back-off has passed.
	unpullable := newTestPod("unpullable")
	unpullable.Spec.Containers = []corev1.Container{{Name: "c", Image: "skiff.invalid/absent:v1"}}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), unpullable, 0) })
	for i, want := range []string{"ErrImagePull", "ImagePullBackOff"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := e.rt.SyncPod(ctx, unpullable, "10.251.32.10")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if w := st.Containers[0].State.Waiting; w == nil || w.Reason != want {
			t.Errorf("sync %d: %+v, want waiting %s", i, st.Containers[0].State, want)
		}
	}
	e.clock.advance(11 * time.Second)
	st, err = e.rt.SyncPod(context.Background(), unpullable, "10.251.32.10")
	if err != nil {
		t.Fatal(err)
	}
	if w := st.Containers[0].State.Waiting; w == nil || w.Reason != "ErrImagePull" {
		t.Errorf("after the back-off: %+v, want a new pull (ErrImagePull)", st.Containers[0].State)
	}
	if _, err := e.rt.SyncPod(context.Background(), pod, "not-an-ip"); err == nil {
		t.Error("a bad pod IP was accepted")
	}
}

func TestCleanupOrphansRemovesPodsNoLongerBound(t *testing.T) {
	e := newEnv(t, "sktpod3", "10.251.33.0/24")
	kept, orphan := newTestPod("kept"), newTestPod("orphan")
	for i, p := range []*corev1.Pod{kept, orphan} {
		p.Spec.Containers = []corev1.Container{appContainer("main", "sleep")}
		pod := p
		t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
		e.syncUntil(t, p, fmt.Sprintf("10.251.33.%d", 10+i), p.Name+" running", func(s agent.PodState) bool {
			return s.Containers[0].State.Running != nil
		})
	}
	if err := e.rt.CleanupOrphans(context.Background(), map[types.UID]bool{kept.UID: true}); err != nil {
		t.Fatal(err)
	}
	list, err := e.ctr.ListContainers(context.Background(), krt.ListFilter{PodUID: string(kept.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].State != krt.StateRunning {
		t.Errorf("kept pod's containers: %+v", list)
	}
	list, err = e.ctr.ListContainers(context.Background(), krt.ListFilter{PodUID: string(orphan.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("orphan's containers left: %+v", list)
	}
	if e.ctr.PodCgroupExists(string(orphan.UID)) {
		t.Error("orphan's cgroup left")
	}
	if got, _ := e.nets.Get(string(orphan.UID)); got != nil {
		t.Error("orphan's address still held")
	}
}

func TestOpenNodeImportsAgentImagesAndRunsAPod(t *testing.T) {
	socket := nodetest.RequireContainerd(t)
	dataDir := t.TempDir()
	images := filepath.Join(dataDir, "agent", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	testimage.Build(t, images) // leaves testapp.tar (and the binary, ignored) there
	driver := testimage.BuildLogDriver(t, t.TempDir())
	ctx := context.Background()
	n, err := OpenNode(ctx, NodeOptions{
		DataDir: dataDir, PodCIDR: "10.251.34.0/24", ContainerdSocket: socket, LogDriver: driver,
		ContainerdNamespace: "skiff-test-node", CgroupRoot: "/skiff-test-node", Bridge: "sktnode0", LogDir: t.TempDir(),
		// Not the default prefix: a real node agent on this machine (the
		// e2e tests) cleans up "skiff-" namespaces it does not know.
		NetnsPrefix: "skifftest-",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	defer n.Network.RemoveBridge(context.Background())
	if v, err := n.Version(ctx); err != nil || v == "" {
		t.Errorf("version %q (%v)", v, err)
	}
	pod := newTestPod("node")
	pod.Spec.Containers = []corev1.Container{appContainer("main", "sleep")}
	defer n.KillPod(context.Background(), pod, 0)
	deadline := time.Now().Add(waitLong)
	for {
		st, err := n.SyncPod(ctx, pod, "10.251.34.7")
		if err != nil {
			t.Fatal(err)
		}
		if st.Containers[0].State.Running != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never running: %+v", st)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := n.KillPod(ctx, pod, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "agent", "pods", string(pod.UID))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod directory left (stat err %v)", err)
	}

	if _, err := OpenNode(ctx, NodeOptions{DataDir: dataDir, PodCIDR: "10.251.34.0/24", ContainerdSocket: "/nonexistent/containerd.sock", LogDriver: driver}); err == nil ||
		!strings.Contains(err.Error(), "containerd socket /nonexistent/containerd.sock not found") {
		t.Errorf("missing socket: %v", err)
	}
	if _, err := OpenNode(ctx, NodeOptions{DataDir: "relative", PodCIDR: "10.251.34.0/24"}); err == nil {
		t.Error("relative data dir accepted")
	}
}

func TestProbesGateReadinessAndRestartOnLivenessFailure(t *testing.T) {
	e := newEnv(t, "sktpod4", "10.251.35.0/24")
	t.Cleanup(e.rt.Stop)
	pod := newTestPod("probed")
	one := int64(1)
	pod.Spec.TerminationGracePeriodSeconds = &one
	ready := appContainer("ready", "serve", ":8080")
	ready.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
	never := appContainer("never", "sleep")
	never.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5,
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "crash", "1"}}}}
	dying := appContainer("dying", "serve", ":9090")
	dying.LivenessProbe = &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 2,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(9091)}}}
	// A startup probe that never succeeds restarts its container too.
	late := appContainer("late", "serve", ":7070")
	late.StartupProbe = &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 2,
		ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(7071)}}}
	pod.Spec.Containers = []corev1.Container{ready, never, dying, late}
	rec := record.NewFakeRecorder(1000)
	e.rt.rec = rec
	const ip = "10.251.35.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	st := e.syncUntil(t, pod, ip, "ready container ready", func(s agent.PodState) bool {
		return s.Containers[0].Ready
	})
	if st.Containers[1].Ready || st.Containers[1].State.Running == nil {
		t.Errorf("container with a failing readiness probe: ready=%v state %+v", st.Containers[1].Ready, st.Containers[1].State)
	}
	// The liveness probe dials a port nobody listens on: the container is
	// stopped and, with restartPolicy Always, started again — at once, its
	// first exit.
	st = e.syncUntil(t, pod, ip, "dying container killed by its liveness probe", func(s agent.PodState) bool {
		return s.Containers[2].LastTerminationState.Terminated != nil || s.Containers[2].State.Terminated != nil
	})
	st = e.syncUntil(t, pod, ip, "dying container restarted", func(s agent.PodState) bool {
		return s.Containers[2].RestartCount == 1 && s.Containers[2].State.Running != nil
	})
	if lt := st.Containers[2].LastTerminationState.Terminated; lt == nil || lt.ExitCode != 0 {
		// serve exits 0 on SIGTERM: the probe's kill is graceful.
		t.Errorf("last termination %+v, want the SIGTERM exit (0)", st.Containers[2].LastTerminationState)
	}
	if st.Containers[0].RestartCount != 0 || st.Containers[1].RestartCount != 0 {
		t.Errorf("healthy containers restarted: %d, %d", st.Containers[0].RestartCount, st.Containers[1].RestartCount)
	}
	e.syncUntil(t, pod, ip, "late container killed by its startup probe", func(s agent.PodState) bool {
		return s.Containers[3].LastTerminationState.Terminated != nil || s.Containers[3].State.Terminated != nil
	})
	// The kubelet's events for all of it.
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	all := strings.Join(events, "\n")
	for _, want := range []string{
		`Normal Pulled Container image "` + testimage.Ref + `" already present on machine`,
		"Warning Unhealthy Readiness probe failed: ",
		"Warning Unhealthy Liveness probe failed: Get \"http://" + ip + ":9091/healthz\"",
		"Normal Killing Container dying failed liveness probe, will be restarted",
		"Warning Unhealthy Startup probe failed: dial tcp " + ip + ":7071",
		"Normal Killing Container late failed startup probe, will be restarted",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("events lack %q:\n%s", want, all)
		}
	}
}

func TestNodeAPIExecAndLogsOnARealPod(t *testing.T) {
	e := newEnv(t, "sktpod5", "10.251.36.0/24")
	pod := newTestPod("api")
	pod.Spec.Containers = []corev1.Container{appContainer("main", "sleep")}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
	e.syncUntil(t, pod, "10.251.36.9", "running", func(s agent.PodState) bool { return s.Containers[0].State.Running != nil })
	srv := httptest.NewServer(nodeapi.NewHandler(e.rt))
	defer srv.Close()

	exec := func(cmd ...string) (string, error) {
		q := url.Values{"command": cmd, "output": {"1"}, "error": {"1"}}
		u, _ := url.Parse(srv.URL + "/exec/default/api/main?" + q.Encode())
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
		return out.String(), err
	}
	if out, err := exec("/app", "echo", "through", "the", "node", "API"); err != nil || out != "through the node API\n" {
		t.Errorf("exec echo: %q (%v)", out, err)
	}
	_, err := exec("/app", "crash", "9")
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 9 {
		t.Errorf("exec crash 9: %v, want exit status 9", err)
	}

	resp, err := http.Get(srv.URL + "/containerLogs/default/api/main")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "sleeping") {
		t.Errorf("logs: %d %q", resp.StatusCode, body)
	}
}

func TestPodFilesAndAdoptionAfterAnAgentRestart(t *testing.T) {
	e := newEnv(t, "sktpod6", "10.251.37.0/24")
	pod := newTestPod("adopted")
	pod.Spec.Hostname = "myhost"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"alias.example"}}}
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"svc.example"}}
	pod.Spec.Containers = []corev1.Container{appContainer("main", "sleep")}
	const ip = "10.251.37.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
	st := e.syncUntil(t, pod, ip, "running", func(s agent.PodState) bool { return s.Containers[0].State.Running != nil })
	id := strings.TrimPrefix(st.Containers[0].ContainerID, "containerd://")
	cs, err := e.ctr.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	root := fmt.Sprintf("/proc/%d/root", cs.Pid)
	hosts, err := os.ReadFile(root + "/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"127.0.0.1\tlocalhost", ip + "\tmyhost", "10.9.9.9\talias.example"} {
		if !strings.Contains(string(hosts), want) {
			t.Errorf("container /etc/hosts lacks %q:\n%s", want, hosts)
		}
	}
	resolv, err := os.ReadFile(root + "/etc/resolv.conf")
	if err != nil || !strings.Contains(string(resolv), "search svc.example") {
		t.Errorf("container /etc/resolv.conf: %q (%v)", resolv, err)
	}

	// A new pod runtime on the same containerd and network state is the
	// restarted agent: it adopts the running container instead of
	// starting another.
	restarted, err := New(Config{Containers: e.ctr, Network: e.nets, PodDir: e.pods, LogDir: e.logs, Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Stop()
	again, err := restarted.SyncPod(context.Background(), pod, ip)
	if err != nil {
		t.Fatal(err)
	}
	if c := again.Containers[0]; c.ContainerID != st.Containers[0].ContainerID || c.State.Running == nil || c.RestartCount != 0 {
		t.Errorf("after restart: %+v, want the same running container %s", c, st.Containers[0].ContainerID)
	}
}

func TestConfigMapVolumeUpdatesReachTheRunningContainer(t *testing.T) {
	e := newEnv(t, "sktpod7", "10.251.38.0/24")
	e.objs.putConfigMap("default", "site", map[string]string{"index.html": "version one"})
	e.objs.putSecret("default", "creds", map[string][]byte{"token": []byte("t0k3n")})
	pod := newTestPod("configured")
	c := appContainer("main", "sleep")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "site", MountPath: "/site", ReadOnly: true}}
	c.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}}}
	pod.Spec.Containers = []corev1.Container{c}
	pod.Spec.Volumes = []corev1.Volume{{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "site"}}}}}
	const ip = "10.251.38.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
	st := e.syncUntil(t, pod, ip, "running", func(s agent.PodState) bool { return s.Containers[0].State.Running != nil })
	id := strings.TrimPrefix(st.Containers[0].ContainerID, "containerd://")
	var envOut bytes.Buffer
	if _, err := e.ctr.Exec(context.Background(), id, krt.ExecOptions{Command: []string{"/app", "env"}, Stdout: &envOut}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(envOut.String(), "TOKEN=t0k3n\n") {
		t.Errorf("secret env missing:\n%s", envOut.String())
	}
	cs, err := e.ctr.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("/proc/%d/root/site/index.html", cs.Pid)
	if b, err := os.ReadFile(file); err != nil || string(b) != "version one" {
		t.Fatalf("in the container: %q (%v)", b, err)
	}
	e.objs.putConfigMap("default", "site", map[string]string{"index.html": "version two"})
	if _, err := e.rt.SyncPod(context.Background(), pod, ip); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "version two" {
		t.Errorf("after the update, in the container: %q (%v)", b, err)
	}

	// A pod whose configMap is missing waits with CreateContainerConfigError.
	broken := newTestPod("broken")
	bc := appContainer("main", "sleep")
	bc.VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
	broken.Spec.Containers = []corev1.Container{bc}
	broken.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}}}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), broken, 0) })
	bst, err := e.rt.SyncPod(context.Background(), broken, "10.251.38.10")
	if err != nil {
		t.Fatal(err)
	}
	if w := bst.Containers[0].State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || !strings.Contains(w.Message, "absent") {
		t.Errorf("missing configMap: %+v", bst.Containers[0].State)
	}
}

func TestLifecycleHooks(t *testing.T) {
	e := newEnv(t, "sktpod8", "10.251.39.0/24")
	hostDir := t.TempDir()
	pod := newTestPod("hooked")
	c := appContainer("main", "sleep")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}
	c.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "touch", "/host/post-start"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "touch", "/host/pre-stop"}}},
	}
	failing := appContainer("failing", "sleep")
	failing.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "crash", "1"}}}}
	// A failing preStop hook is told of without its command or output (the
	// kubelet keeps what it ran, maybe secrets, out of the event).
	stopFailing := appContainer("stop-failing", "sleep")
	stopFailing.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "crash", "3"}}}}
	pod.Spec.Containers = []corev1.Container{c, failing, stopFailing}
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}}
	rec := record.NewFakeRecorder(100)
	e.rt.rec = rec
	const ip = "10.251.39.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
	e.syncUntil(t, pod, ip, "main and stop-failing running, failing killed", func(s agent.PodState) bool {
		return s.Containers[0].State.Running != nil && s.Containers[2].State.Running != nil &&
			(s.Containers[1].State.Terminated != nil || s.Containers[1].State.Waiting != nil && s.Containers[1].State.Waiting.Reason == "CrashLoopBackOff")
	})
	if _, err := os.Stat(filepath.Join(hostDir, "post-start")); err != nil {
		t.Errorf("postStart hook did not run: %v", err)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	contains := func(want string) bool {
		for _, e := range events {
			if strings.Contains(e, want) {
				return true
			}
		}
		return false
	}
	if want := `Warning FailedPostStartHook Exec lifecycle hook ([/app crash 1]) for Container "failing" in Pod "hooked_`; !contains(want) {
		t.Errorf("events lack %q:\n%s", want, strings.Join(events, "\n"))
	}
	if _, err := os.Stat(filepath.Join(hostDir, "pre-stop")); err == nil {
		t.Error("preStop ran before the pod was stopped")
	}
	if err := e.rt.KillPod(context.Background(), pod, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "pre-stop")); err != nil {
		t.Errorf("preStop hook did not run on KillPod: %v", err)
	}
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if want := "Warning FailedPreStopHook PreStopHook failed"; !slices.Contains(events, want) {
		t.Errorf("events lack %q:\n%s", want, strings.Join(events, "\n"))
	}
	if contains("crash 3") {
		t.Errorf("an event names the preStop command:\n%s", strings.Join(events, "\n"))
	}
	e.assertGone(t, pod)
}

// The runtime tells the agent of changes nobody asked for — a container's
// exit (containerd's task exit event), a probe's verdict turning — and
// says when a back-off ends, so the agent need not poll running pods.
func TestRuntimeTellsOfExitsProbeVerdictsAndBackOffEnds(t *testing.T) {
	e := newEnv(t, "sktpod7", "10.251.38.0/24")
	t.Cleanup(e.rt.Stop)
	changed := make(chan types.UID, 100)
	e.rt.OnPodChange(func(uid types.UID) { changed <- uid })
	// The pod is given so that a missing notice says what the runtime
	// saw instead: this once failed in a loaded CI run and passed alone.
	waitChange := func(what string, pod *corev1.Pod, ip string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case got := <-changed:
				if got == pod.UID {
					return
				}
			case <-timeout:
				st, err := e.rt.SyncPod(context.Background(), pod, ip)
				var containers []corev1.ContainerStatus
				if err == nil {
					containers = st.Containers
				}
				t.Fatalf("no change notice for %s within 30s; %d probe workers run; the pod now: %+v (sync error %v)",
					what, e.rt.probes.Len(), containers, err)
			}
		}
	}

	crasher := newTestPod("exits")
	crasher.Spec.Containers = []corev1.Container{appContainer("c", "crash", "3")}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), crasher, 0) })
	if _, err := e.rt.SyncPod(context.Background(), crasher, "10.251.38.9"); err != nil {
		t.Fatal(err)
	}
	waitChange("a container's exit", crasher, "10.251.38.9")
	st, err := e.rt.SyncPod(context.Background(), crasher, "10.251.38.9")
	if err != nil {
		t.Fatal(err)
	}
	// The first exit is restarted at once: no back-off to look again at.
	if c := st.Containers[0]; c.RestartCount != 1 || c.State.Waiting != nil || st.RecheckAfter != 0 {
		t.Fatalf("after the first exit: %d restarts, state %+v, RecheckAfter %v; want restarted at once", c.RestartCount, c.State, st.RecheckAfter)
	}
	// The second waits 10s, and the runtime says when that ends.
	for st.Containers[0].State.Waiting == nil {
		waitChange("the second exit", crasher, "10.251.38.9")
		if st, err = e.rt.SyncPod(context.Background(), crasher, "10.251.38.9"); err != nil {
			t.Fatal(err)
		}
	}
	if w := st.Containers[0].State.Waiting; w.Reason != "CrashLoopBackOff" || st.Containers[0].RestartCount != 1 {
		t.Fatalf("after the second exit: state %+v, %d restarts, want CrashLoopBackOff after 1", st.Containers[0].State, st.Containers[0].RestartCount)
	}
	if st.RecheckAfter <= 0 || st.RecheckAfter > 10*time.Second {
		t.Errorf("RecheckAfter = %v in a 10s back-off, want (0, 10s]", st.RecheckAfter)
	}

	probed := newTestPod("turns-ready")
	c := appContainer("web", "serve", ":8080")
	c.ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5,
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}
	probed.Spec.Containers = []corev1.Container{c}
	t.Cleanup(func() { e.rt.KillPod(context.Background(), probed, 0) })
	if _, err := e.rt.SyncPod(context.Background(), probed, "10.251.38.10"); err != nil {
		t.Fatal(err)
	}
	waitChange("a readiness verdict", probed, "10.251.38.10")
	if st, err := e.rt.SyncPod(context.Background(), probed, "10.251.38.10"); err != nil || !st.Containers[0].Ready {
		t.Errorf("after the readiness notice: ready=%v (%v), want ready", err == nil && st.Containers[0].Ready, err)
	}
}

// sidecarSpec makes pod's first init container a sidecar (restartPolicy
// Always) and gives it and the app containers an emptyDir at /shared.
func sidecarSpec(pod *corev1.Pod, side corev1.Container, apps ...corev1.Container) {
	always := corev1.ContainerRestartPolicyAlways
	side.RestartPolicy = &always
	shared := []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	side.VolumeMounts = shared
	for i := range apps {
		apps[i].VolumeMounts = shared
	}
	pod.Spec.InitContainers = []corev1.Container{side}
	pod.Spec.Containers = apps
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

func execProbe(cmd ...string) *corev1.Probe {
	return &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
}

// A sidecar (an init container with restartPolicy Always) is started in
// its turn and lets the app containers start once it runs and has started
// (postStart hook done, startup probe passed); when the app containers are
// done for good the sidecar is stopped and not restarted, so the pod
// completes; StopSandbox then releases the pod's network, keeping its
// containers until KillPod.
func TestSidecarRunsBeforeTheAppAndStopsWhenThePodCompletes(t *testing.T) {
	e := newEnv(t, "sktside0", "10.251.60.0/24")
	t.Cleanup(e.rt.Stop)
	pod := newTestPod("sidecar")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	side := appContainer("side", "sleep")
	side.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/app", "touch", "/shared/ready"}}}}
	side.StartupProbe = execProbe("/app", "read", "/shared/ready")
	// The app fails unless the sidecar's postStart hook ran before it.
	sidecarSpec(pod, side, appContainer("app", "read", "/shared/ready"))
	const ip = "10.251.60.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	// Until its startup probe passes, the sidecar holds the app back.
	st, err := e.rt.SyncPod(context.Background(), pod, ip)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.InitContainers[0]; s.State.Running == nil || s.Started == nil || *s.Started {
		t.Errorf("sidecar at first: %+v started=%v, want running, not started", s.State, s.Started)
	}
	if w := st.Containers[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("app at first: %+v, want waiting PodInitializing", st.Containers[0].State)
	}
	sideID := st.InitContainers[0].ContainerID

	st = e.syncUntil(t, pod, ip, "app and sidecar ended", func(s agent.PodState) bool {
		return s.Containers[0].State.Terminated != nil && s.InitContainers[0].State.Terminated != nil
	})
	if term := st.Containers[0].State.Terminated; term.ExitCode != 0 || term.Reason != krt.ReasonCompleted {
		t.Errorf("app ended %+v, want exit 0 Completed (it ran after the sidecar's postStart hook)", term)
	}
	// The sidecar got SIGTERM ("sleep" exits 0 on it) and was not restarted.
	s := st.InitContainers[0]
	if term := s.State.Terminated; term.ExitCode != 0 || s.RestartCount != 0 || s.ContainerID != sideID || s.Ready {
		t.Errorf("sidecar ended %+v restarts=%d id=%s ready=%v, want the first attempt stopped (exit 0), not ready",
			term, s.RestartCount, s.ContainerID, s.Ready)
	}
	list, err := e.ctr.ListContainers(context.Background(), krt.ListFilter{PodUID: string(pod.UID)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.State != krt.StateExited {
			t.Errorf("container %s is %s, want exited", c.Name, c.State)
		}
	}
	again, err := e.rt.SyncPod(context.Background(), pod, ip)
	if err != nil {
		t.Fatal(err)
	}
	if s := again.InitContainers[0]; s.State.Terminated == nil || s.ContainerID != sideID {
		t.Errorf("a later sync: sidecar %+v (%s), want still the stopped %s", s.State, s.ContainerID, sideID)
	}

	// The finished pod's network goes; its containers stay for their logs.
	for range 2 {
		if err := e.rt.StopSandbox(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := e.nets.Get(string(pod.UID)); got != nil {
		t.Errorf("finished pod's address still held: %s", got.IP)
	}
	if _, err := os.Stat("/var/run/netns/skifftest-" + string(pod.UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("finished pod's netns left (stat err %v)", err)
	}
	if list, err := e.ctr.ListContainers(context.Background(), krt.ListFilter{PodUID: string(pod.UID)}); err != nil || len(list) != 2 {
		t.Errorf("after StopSandbox: containers %+v (%v), want both kept", list, err)
	}
	if err := e.rt.KillPod(context.Background(), pod, time.Minute); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, pod)
}

// After initialization a sidecar that exits is restarted with back-off —
// the first exit at once, the second after 10s — (under any
// restartPolicy) without holding the app container back; its
// readiness probe makes its ready field. When the pod is deleted, the
// sidecar stops after the app container.
func TestSidecarCrashAfterInitDoesNotHoldTheAppBack(t *testing.T) {
	e := newEnv(t, "sktside1", "10.251.61.0/24")
	t.Cleanup(e.rt.Stop)
	pod := newTestPod("sidecar-crash")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	side := appContainer("side", "sleep")
	side.ReadinessProbe = execProbe("/app", "read", "/shared/ready")
	app := appContainer("app", "sleep")
	app.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 2}}}
	sidecarSpec(pod, side, app)
	const ip = "10.251.61.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	st := e.syncUntil(t, pod, ip, "app running", func(s agent.PodState) bool { return s.Containers[0].State.Running != nil })
	if s := st.InitContainers[0]; s.State.Running == nil || s.Started == nil || !*s.Started || s.Ready {
		t.Errorf("sidecar: %+v started=%v ready=%v, want running, started, not ready (its readiness probe fails)", s.State, s.Started, s.Ready)
	}
	appID := st.Containers[0].ContainerID
	if err := os.WriteFile(filepath.Join(emptyDirPath(e.rt.podPath(pod.UID), "shared"), "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st = e.syncUntil(t, pod, ip, "sidecar ready", func(s agent.PodState) bool { return s.InitContainers[0].Ready })

	// The sidecar dies: its first exit is restarted at once …
	if err := e.ctr.StopContainer(context.Background(), strings.TrimPrefix(st.InitContainers[0].ContainerID, "containerd://"), 0); err != nil {
		t.Fatal(err)
	}
	st = e.syncUntil(t, pod, ip, "sidecar restarted at once", func(s agent.PodState) bool {
		return s.InitContainers[0].RestartCount > 0 || s.InitContainers[0].State.Waiting != nil
	})
	if s := st.InitContainers[0]; s.RestartCount != 1 || s.State.Running == nil {
		t.Fatalf("sidecar after its first exit: %+v (%d restarts), want running again at once", s.State, s.RestartCount)
	}
	// … its second waits out a back-off while the app runs on.
	if err := e.ctr.StopContainer(context.Background(), strings.TrimPrefix(st.InitContainers[0].ContainerID, "containerd://"), 0); err != nil {
		t.Fatal(err)
	}
	st = e.syncUntil(t, pod, ip, "sidecar in back-off", func(s agent.PodState) bool {
		w := s.InitContainers[0].State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff"
	})
	if msg := st.InitContainers[0].State.Waiting.Message; !strings.Contains(msg, "back-off 10s") {
		t.Errorf("sidecar's back-off message %q, want 10s", msg)
	}
	if c := st.Containers[0]; c.State.Running == nil || c.ContainerID != appID {
		t.Errorf("app while the sidecar backs off: %+v (%s), want %s running on", c.State, c.ContainerID, appID)
	}
	e.clock.advance(11 * time.Second)
	st = e.syncUntil(t, pod, ip, "sidecar restarted", func(s agent.PodState) bool {
		return s.InitContainers[0].RestartCount == 2 && s.InitContainers[0].State.Running != nil
	})
	if c := st.Containers[0]; c.State.Running == nil || c.ContainerID != appID || c.RestartCount != 0 {
		t.Errorf("app after the sidecar's restart: %+v (%s, %d restarts), want %s untouched", c.State, c.ContainerID, c.RestartCount, appID)
	}

	// Deleted: the app's preStop hook takes 2s; the sidecar is sent
	// SIGTERM only once the app has exited.
	st, err := e.rt.StopPod(context.Background(), pod, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	appEnd, sideEnd := st.Containers[0].State.Terminated, st.InitContainers[0].State.Terminated
	if appEnd == nil || sideEnd == nil {
		t.Fatalf("after StopPod: app %+v, sidecar %+v, want both terminated", st.Containers[0].State, st.InitContainers[0].State)
	}
	if sideEnd.FinishedAt.Time.Before(appEnd.FinishedAt.Time) {
		t.Errorf("sidecar ended at %v, before the app (%v)", sideEnd.FinishedAt.Time, appEnd.FinishedAt.Time)
	}
	if err := e.rt.KillPod(context.Background(), pod, 0); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, pod)
}

// importSecondImage imports the test program under another name (v2), for
// a pod update to change a container's image to.
func importSecondImage(t *testing.T, e *env) string {
	t.Helper()
	const ref = "skiff.test/testapp:v2"
	dir := t.TempDir()
	testimage.Build(t, dir) // compiles the program to dir/app
	tarPath := filepath.Join(dir, "v2.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = testimage.Pack(f, testimage.Image{Ref: ref, Files: []testimage.File{{Path: "app", Source: filepath.Join(dir, "app"), Mode: 0o755}},
		Dirs: []string{"tmp"}, Entrypoint: []string{"/app"}, Cmd: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ctr.ImportImages(context.Background(), tarPath); err != nil {
		t.Fatal(err)
	}
	return ref
}

// A running container whose image a pod update changed is restarted from
// the new image, as the kubelet restarts a container whose spec hash
// changed: a sidecar ("Init container side definition changed") as an app
// container ("Container app definition changed, will be restarted"), each
// alone, at once (no back-off) and under restartPolicy Never too. An init
// container that completed is not run again.
func TestChangedImageRestartsSidecarsAndAppContainers(t *testing.T) {
	e := newEnv(t, "sktside2", "10.251.62.0/24")
	t.Cleanup(e.rt.Stop)
	rec := record.NewFakeRecorder(100)
	e.rt.rec = rec
	v2 := importSecondImage(t, e)
	pod := newTestPod("changed")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	sidecarSpec(pod, appContainer("side", "sleep"), appContainer("app", "sleep"))
	pod.Spec.InitContainers = append([]corev1.Container{appContainer("setup", "echo", "done")}, pod.Spec.InitContainers...)
	const ip = "10.251.62.9"
	t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })

	st := e.syncUntil(t, pod, ip, "app running", func(s agent.PodState) bool { return s.Containers[0].State.Running != nil })
	setupID, sideID, appID := st.InitContainers[0].ContainerID, st.InitContainers[1].ContainerID, st.Containers[0].ContainerID
	imageOf := func(id string) string {
		s, err := e.ctr.ContainerStatus(context.Background(), strings.TrimPrefix(id, "containerd://"))
		if err != nil {
			t.Fatal(err)
		}
		return s.Image
	}
	v1Image := imageOf(sideID)

	for _, step := range []struct {
		name     string
		update   func(*corev1.Pod)
		restarts func(agent.PodState) corev1.ContainerStatus
		event    string
	}{
		{"sidecar", func(p *corev1.Pod) { p.Spec.InitContainers[1].Image = v2 },
			func(s agent.PodState) corev1.ContainerStatus { return s.InitContainers[1] }, "Normal Killing Init container side definition changed"},
		{"app", func(p *corev1.Pod) { p.Spec.Containers[0].Image = v2 },
			func(s agent.PodState) corev1.ContainerStatus { return s.Containers[0] }, "Normal Killing Container app definition changed, will be restarted"},
	} {
		pod = pod.DeepCopy()
		step.update(pod)
		pod.Spec.InitContainers[0].Image = v2 // a completed init container's change runs nothing
		st = e.syncUntil(t, pod, ip, step.name+" restarted", func(s agent.PodState) bool {
			c := step.restarts(s)
			return c.RestartCount == 1 && c.State.Running != nil
		})
		c := step.restarts(st)
		if got := imageOf(c.ContainerID); got == v1Image {
			t.Errorf("%s restarted from %s, want the new image", step.name, got)
		}
		if c.LastTerminationState.Terminated == nil {
			t.Errorf("%s: no last termination state after its restart: %+v", step.name, c)
		}
		if s := st.InitContainers[0]; s.ContainerID != setupID || s.State.Terminated == nil || s.RestartCount != 0 {
			t.Errorf("after the %s's change, setup: %+v (%s, %d restarts), want %s completed, not run again", step.name, s.State, s.ContainerID, s.RestartCount, setupID)
		}
		if s := st.InitContainers[0]; s.Image != testimage.Ref {
			t.Errorf("after the %s's change, setup reports image %s, want %s, the one it ran", step.name, s.Image, testimage.Ref)
		}
		if c.Image != v2 {
			t.Errorf("%s restarted reports image %s, want %s", step.name, c.Image, v2)
		}
		if found := waitEvent(rec, step.event); !found {
			t.Errorf("no event %q", step.event)
		}
		if step.name == "sidecar" {
			if a := st.Containers[0]; a.ContainerID != appID || a.State.Running == nil || a.RestartCount != 0 {
				t.Errorf("app after the sidecar's restart: %+v (%s, %d restarts), want %s untouched", a.State, a.ContainerID, a.RestartCount, appID)
			}
			sideID = st.InitContainers[1].ContainerID
		} else if s := st.InitContainers[1]; s.ContainerID != sideID || s.State.Running == nil || s.RestartCount != 1 {
			t.Errorf("sidecar after the app's restart: %+v (%s, %d restarts), want %s untouched", s.State, s.ContainerID, s.RestartCount, sideID)
		}
	}

	// The kubelet keys a back-off by the spec hash, so a new definition's
	// starts afresh. The sidecar restarted from v2 had no earlier attempt
	// that exited: for the kubelet its first exit is a first one,
	// restarted at once.
	stopSidecar := func() {
		t.Helper()
		if err := e.ctr.StopContainer(context.Background(), strings.TrimPrefix(st.InitContainers[1].ContainerID, "containerd://"), 0); err != nil {
			t.Fatal(err)
		}
	}
	restarts := func(s agent.PodState) int32 { return s.InitContainers[1].RestartCount }
	stopSidecar()
	st = e.syncUntil(t, pod, ip, "sidecar restarted at once", func(s agent.PodState) bool {
		return restarts(s) > 1 || s.InitContainers[1].State.Waiting != nil
	})
	if s := st.InitContainers[1]; s.RestartCount != 2 || s.State.Running == nil {
		t.Fatalf("sidecar after its first exit from v2: %+v (%d restarts), want running again at once", s.State, s.RestartCount)
	}
	// Restarted for a new image with an earlier attempt exited, its
	// back-off starts with that restart, as the kubelet's: the next exit
	// waits 10s.
	pod = pod.DeepCopy()
	pod.Spec.InitContainers[1].Image = testimage.Ref
	st = e.syncUntil(t, pod, ip, "sidecar restarted for its image", func(s agent.PodState) bool { return restarts(s) > 2 })
	if s := st.InitContainers[1]; s.RestartCount != 3 || s.State.Running == nil {
		t.Fatalf("sidecar after its image changed: %+v (%d restarts), want running again at once", s.State, s.RestartCount)
	}
	stopSidecar()
	st = e.syncUntil(t, pod, ip, "sidecar in back-off", func(s agent.PodState) bool {
		return s.InitContainers[1].State.Waiting != nil || restarts(s) > 3
	})
	if s := st.InitContainers[1]; s.RestartCount != 3 || s.State.Waiting == nil || !strings.Contains(s.State.Waiting.Message, "back-off 10s") {
		t.Fatalf("sidecar after its exit from the changed image: %+v (%d restarts), want waiting 10s", s.State, s.RestartCount)
	}
	// A sidecar waiting out its back-off starts at once from a changed
	// image (the clock does not move: its 10s back-off has not passed),
	// and its next exit waits 10s.
	pod = pod.DeepCopy()
	pod.Spec.InitContainers[1].Image = v2
	st, err := e.rt.SyncPod(context.Background(), pod, ip)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.InitContainers[1]; s.State.Running == nil || s.RestartCount != 4 {
		t.Fatalf("sidecar in back-off after its image changed: %+v (%d restarts), want running again at once", s.State, s.RestartCount)
	}
	stopSidecar()
	st = e.syncUntil(t, pod, ip, "sidecar in back-off again", func(s agent.PodState) bool {
		return s.InitContainers[1].State.Waiting != nil || restarts(s) > 4
	})
	if s := st.InitContainers[1]; s.RestartCount != 4 || s.State.Waiting == nil || !strings.Contains(s.State.Waiting.Message, "back-off 10s") {
		t.Errorf("sidecar after its exit from the changed image: %+v (%d restarts), want waiting 10s", s.State, s.RestartCount)
	}
	if err := e.rt.KillPod(context.Background(), pod, 0); err != nil {
		t.Fatal(err)
	}
	e.assertGone(t, pod)
}

// waitEvent reads the recorder's events until one is want (true) or none
// comes for a while (false).
func waitEvent(rec *record.FakeRecorder, want string) bool {
	for {
		select {
		case got := <-rec.Events:
			if got == want {
				return true
			}
		case <-time.After(5 * time.Second):
			return false
		}
	}
}
