//go:build linux

package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/vishvananda/netlink"

	"github.com/skiffkube/skiff/kubelet/logs"
	"github.com/skiffkube/skiff/kubelet/network"
	"github.com/skiffkube/skiff/kubelet/nodetest"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// Tests use their own containerd namespace and cgroup root so that they
// never touch a real agent's containers on the same machine.
const (
	testNamespace  = "skiff-test"
	testCgroupRoot = "/skiff-test"
	// Generous: the machine is shared and may be loaded.
	waitLong = 3 * time.Minute
)

var (
	buildOnce sync.Once
	buildDir  string
	imageTar  string
	logDriver string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// build builds the test image and the log driver once per test binary.
func build(t *testing.T) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "skiff-testimage-")
		if buildErr != nil {
			return
		}
		imageTar, _ = testimage.Build(t, buildDir)
		logDriver = testimage.BuildLogDriver(t, buildDir)
	})
	if buildErr != nil || imageTar == "" || logDriver == "" {
		t.Fatalf("test image and log driver: %v", buildErr)
	}
}

// buildImage returns the test image's tarball.
func buildImage(t *testing.T) string {
	build(t)
	return imageTar
}

// testConfig is the runtime configuration of every test: its own namespace
// and cgroup root, and the log driver.
func testConfig(t *testing.T) Config {
	build(t)
	return Config{Socket: nodetest.RequireContainerd(t), Namespace: testNamespace, CgroupRoot: testCgroupRoot, LogDriver: logDriver}
}

func newTestRuntime(t *testing.T) *Runtime {
	t.Helper()
	ctx := context.Background()
	r, err := New(ctx, testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	refs, err := r.ImportImages(ctx, buildImage(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0] != testimage.Ref {
		t.Fatalf("imported %v, want [%s]", refs, testimage.Ref)
	}
	return r
}

// podFixture is one pod's worth of runtime state, removed at cleanup.
type podFixture struct {
	t      *testing.T
	r      *Runtime
	uid    string
	logDir string
	ids    []string
}

func newPod(t *testing.T, r *Runtime) *podFixture {
	t.Helper()
	uid := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(uid) > 50 {
		uid = uid[:50]
	}
	p := &podFixture{t: t, r: r, uid: uid, logDir: t.TempDir()}
	t.Cleanup(func() { p.remove() })
	return p
}

func (p *podFixture) config(name string, args ...string) krt.ContainerConfig {
	return krt.ContainerConfig{
		PodUID:       p.uid,
		PodNamespace: "default",
		PodName:      "pod-" + p.uid,
		Name:         name,
		Image:        testimage.Ref,
		Args:         args,
		LogPath:      filepath.Join(p.logDir, name, "0.log"),
	}
}

// run creates and starts a container.
func (p *podFixture) run(cfg krt.ContainerConfig) string {
	p.t.Helper()
	ctx := context.Background()
	id, err := p.r.CreateContainer(ctx, cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	p.ids = append(p.ids, id)
	if err := p.r.StartContainer(ctx, id); err != nil {
		p.t.Fatal(err)
	}
	return id
}

func (p *podFixture) remove() {
	ctx := context.Background()
	for _, id := range p.ids {
		if err := p.r.RemoveContainer(ctx, id); err != nil {
			p.t.Errorf("remove %s: %v", id, err)
		}
	}
	if err := p.r.RemovePod(ctx, p.uid); err != nil {
		p.t.Errorf("remove pod cgroup: %v", err)
	}
}

// waitState polls the container until it reaches want.
func waitState(t *testing.T, r *Runtime, id string, want krt.State) krt.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		s, err := r.ContainerStatus(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if s.State == want {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s is %s after %v, want %s", id, s.State, waitLong, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitLog polls the container's log until it contains want.
func waitLog(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never contained %q; it has:\n%s", path, want, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exec(t *testing.T, r *Runtime, id string, stdin io.Reader, cmd ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	code, err := r.Exec(ctx, id, krt.ExecOptions{Command: cmd, Stdin: stdin, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return out.String(), errOut.String(), code
}

// assertNothingLeft checks that no container, container snapshot or
// cgroup of the pod remains.
func assertNothingLeft(t *testing.T, r *Runtime, podUID string, ids []string) {
	t.Helper()
	ctx := r.ns(context.Background())
	cs, err := r.ListContainers(context.Background(), krt.ListFilter{PodUID: podUID})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 0 {
		t.Errorf("containers left: %+v", cs)
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	err = r.c.SnapshotService(r.snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if want[info.Name] {
			t.Errorf("snapshot %s left", info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.PodCgroupExists(podUID) {
		t.Errorf("cgroup %s left", r.podCgroup(podUID))
	}
}

func TestHTTPServerAnswersOnItsPodIPAndLeavesNothingBehind(t *testing.T) {
	r := newTestRuntime(t)
	// The namespace prefix is this package's own: kubelet/podruntime's
	// tests run at the same time and their orphan cleanup tears down every
	// pod network whose namespace carries their prefix ("skifftest-"),
	// which once took this pod's veth away mid-test (no route to host).
	nets, err := network.New(network.Config{PodCIDR: "10.251.20.0/24", StateDir: t.TempDir(), Bridge: "sktrt0", NetnsPrefix: "skiffrttest-"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := nets.EnsureBridge(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nets.RemoveBridge(context.Background()) })
	p := newPod(t, r)
	pn, err := nets.SetUp(ctx, p.uid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nets.TearDown(context.Background(), p.uid) })

	cfg := p.config("web", "serve", ":8080")
	cfg.NetnsPath = pn.NetnsPath
	cfg.Hostname = "web-pod"
	id := p.run(cfg)
	waitState(t, r, id, krt.StateRunning)

	url := fmt.Sprintf("http://%s/healthz", net.JoinHostPort(pn.IP.String(), "8080"))
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(waitLong)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
				t.Fatalf("GET %s: %d %q", url, resp.StatusCode, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s never answered: %v", url, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	resp, err := hc.Get(fmt.Sprintf("http://%s/", net.JoinHostPort(pn.IP.String(), "8080")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(body)) != "web-pod" {
		t.Errorf("hostname = %q, want web-pod", body)
	}

	if err := r.StopContainer(ctx, id, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	s, err := r.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != krt.StateExited || s.ExitCode != 0 || s.Reason != krt.ReasonCompleted {
		t.Errorf("after stop: state %s code %d reason %q, want Exited 0 Completed", s.State, s.ExitCode, s.Reason)
	}
	waitLog(t, cfg.LogPath, "serving on :8080")

	p.remove()
	p.ids = nil
	if err := nets.TearDown(ctx, p.uid); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, r, p.uid, []string{id})
	if _, err := os.Stat(pn.NetnsPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("netns %s left", pn.NetnsPath)
	}
	if _, err := netlink.LinkByName(pn.HostVeth); err == nil {
		t.Errorf("veth %s left", pn.HostVeth)
	}
}

func TestCrasherReportsItsExitCode(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("crasher", "crash", "3")
	id := p.run(cfg)
	s := waitState(t, r, id, krt.StateExited)
	if s.ExitCode != 3 || s.Reason != krt.ReasonError {
		t.Errorf("exit code %d reason %q, want 3 Error", s.ExitCode, s.Reason)
	}
	if s.FinishedAt.IsZero() || s.StartedAt.IsZero() || s.FinishedAt.Before(s.StartedAt) {
		t.Errorf("times: started %v finished %v", s.StartedAt, s.FinishedAt)
	}
	log := waitLog(t, cfg.LogPath, "crashing with exit code 3")
	if !strings.Contains(log, "about to crash") {
		t.Errorf("stdout line missing from log:\n%s", log)
	}
	// The recorded exit survives: asking again gives the same answer.
	again, err := r.ContainerStatus(context.Background(), id)
	if err != nil || again.ExitCode != 3 || again.State != krt.StateExited {
		t.Errorf("second status: %+v (err %v)", again, err)
	}
	if err := r.StartContainer(context.Background(), id); err == nil {
		t.Error("restarting an exited container succeeded; a new attempt should be required")
	}
}

func TestMemoryHogOverItsLimitIsOOMKilled(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("hog", "hog")
	cfg.Resources.MemoryLimit = 32 << 20
	id := p.run(cfg)
	s := waitState(t, r, id, krt.StateExited)
	if s.Reason != krt.ReasonOOMKilled {
		t.Errorf("reason %q (exit code %d), want OOMKilled", s.Reason, s.ExitCode)
	}
	if s.ExitCode != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL)", s.ExitCode)
	}
}

func TestStopSendsSIGTERMBeforeSIGKILL(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	ctx := context.Background()

	// A process that handles SIGTERM exits on it, within the grace period.
	polite := p.config("polite", "sleep", "0")
	politeID := p.run(polite)
	waitLog(t, polite.LogPath, "sleeping")
	if err := r.StopContainer(ctx, politeID, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitLog(t, polite.LogPath, "got SIGTERM")
	s, err := r.ContainerStatus(ctx, politeID)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != krt.StateExited || s.ExitCode != 0 {
		t.Errorf("polite: %s code %d, want Exited 0", s.State, s.ExitCode)
	}

	// PID 1 without a handler ignores SIGTERM; SIGKILL follows the grace period.
	stubborn := p.config("stubborn", "block")
	stubbornID := p.run(stubborn)
	// Only once the handler is installed: a SIGTERM before that would kill
	// the Go program with status 2.
	waitLog(t, stubborn.LogPath, "SIGTERM ignored")
	if err := r.StopContainer(ctx, stubbornID, time.Second); err != nil {
		t.Fatal(err)
	}
	s, err = r.ContainerStatus(ctx, stubbornID)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != krt.StateExited || s.ExitCode != 137 || s.Reason != krt.ReasonError {
		t.Errorf("stubborn: %s code %d reason %q, want Exited 137 Error", s.State, s.ExitCode, s.Reason)
	}
	// Stopping again is a no-op.
	if err := r.StopContainer(ctx, stubbornID, time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestExecReturnsOutputAndExitCode(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	id := p.run(p.config("main", "sleep"))
	waitState(t, r, id, krt.StateRunning)

	out, _, code := exec(t, r, id, nil, "/app", "echo", "hello", "exec")
	if out != "hello exec\n" || code != 0 {
		t.Errorf("echo: %q code %d", out, code)
	}
	_, errOut, code := exec(t, r, id, nil, "/app", "crash", "7")
	if code != 7 || !strings.Contains(errOut, "crashing with exit code 7") {
		t.Errorf("crash: code %d stderr %q, want 7", code, errOut)
	}
	out, _, code = exec(t, r, id, strings.NewReader("from stdin\n"), "/app", "cat")
	if out != "from stdin\n" || code != 0 {
		t.Errorf("cat: %q code %d", out, code)
	}
	if _, err := r.Exec(context.Background(), id, krt.ExecOptions{}); !errors.Is(err, krt.ErrInvalidConfig) {
		t.Errorf("empty command: err %v, want ErrInvalidConfig", err)
	}
	if _, err := r.Exec(context.Background(), "no-such-container", krt.ExecOptions{Command: []string{"/app"}}); !errors.Is(err, krt.ErrNotFound) {
		t.Errorf("missing container: err %v, want ErrNotFound", err)
	}
}

// hostCapEff is this (root) test process's effective capability mask.
func hostCapEff(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return ""
}

func int64p(v int64) *int64 { return &v }

func TestSecurityContextAndProcessSettings(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)

	cases := []struct {
		name string
		edit func(*krt.ContainerConfig)
		cmd  []string
		want string // substring of stdout
		code int
	}{
		{"runs as the given user and group", func(c *krt.ContainerConfig) {
			c.Security.RunAsUser, c.Security.RunAsGroup = int64p(65534), int64p(1234)
		}, []string{"/app", "id"}, "uid=65534 gid=1234", 0},
		{"user alone takes the image's group", func(c *krt.ContainerConfig) {
			c.Security.RunAsUser = int64p(65534)
		}, []string{"/app", "id"}, "uid=65534 gid=65534", 0},
		{"read-only root file system refuses writes", func(c *krt.ContainerConfig) {
			c.Security.ReadOnlyRootFilesystem = true
		}, []string{"/app", "touch", "/newfile"}, "", 1},
		{"writable root file system accepts writes", func(c *krt.ContainerConfig) {}, []string{"/app", "touch", "/newfile"}, "created /newfile", 0},
		{"dropping ALL leaves no capability", func(c *krt.ContainerConfig) {
			c.Security.DropCapabilities = []string{"ALL"}
		}, []string{"/app", "caps"}, "0000000000000000", 0},
		{"drop ALL then add NET_BIND_SERVICE", func(c *krt.ContainerConfig) {
			c.Security.DropCapabilities = []string{"ALL"}
			c.Security.AddCapabilities = []string{"NET_BIND_SERVICE"}
		}, []string{"/app", "caps"}, "0000000000000400", 0},
		{"environment from the pod", func(c *krt.ContainerConfig) {
			c.Env = []string{"GREETING=hello"}
		}, []string{"/app", "env"}, "GREETING=hello", 0},
		{"working directory", func(c *krt.ContainerConfig) {
			c.WorkingDir = "/tmp"
		}, []string{"/app", "pwd"}, "/tmp", 0},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.config(fmt.Sprintf("sec%d", i), "sleep")
			tc.edit(&cfg)
			id := p.run(cfg)
			waitState(t, r, id, krt.StateRunning)
			out, errOut, code := exec(t, r, id, nil, tc.cmd...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("%v: stdout %q stderr %q code %d, want %q code %d", tc.cmd, out, errOut, code, tc.want, tc.code)
			}
		})
	}

	t.Run("privileged has every capability", func(t *testing.T) {
		cfg := p.config("priv", "sleep")
		cfg.Security.Privileged = true
		id := p.run(cfg)
		waitState(t, r, id, krt.StateRunning)
		out, _, _ := exec(t, r, id, nil, "/app", "caps")
		// Privileged means every capability the node itself has.
		if got, want := strings.TrimSpace(out), hostCapEff(t); got != want {
			t.Errorf("privileged CapEff = %s, want the host's %s", got, want)
		}
	})

	t.Run("command replaces entrypoint and args follow it", func(t *testing.T) {
		cfg := p.config("cmd")
		cfg.Command = []string{"/app", "echo"}
		cfg.Args = []string{"from", "command"}
		id := p.run(cfg)
		waitState(t, r, id, krt.StateExited)
		waitLog(t, cfg.LogPath, "from command")
	})
}

func TestCgroupLimitsAreApplied(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("limited", "sleep")
	cfg.Resources = krt.Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20}
	id := p.run(cfg)
	waitState(t, r, id, krt.StateRunning)
	path := r.podCgroup(p.uid) + "/" + id
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(parts...))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if r.cgroups.unified {
		if got := read("/sys/fs/cgroup", path, "memory.max"); got != "67108864" {
			t.Errorf("memory.max = %s", got)
		}
		if got := read("/sys/fs/cgroup", path, "cpu.max"); got != "50000 100000" {
			t.Errorf("cpu.max = %s", got)
		}
		return
	}
	for file, want := range map[string]string{
		"memory/" + path + "/memory.limit_in_bytes": "67108864",
		"cpu/" + path + "/cpu.shares":               "512",
		"cpu/" + path + "/cpu.cfs_quota_us":         "50000",
		"cpu/" + path + "/cpu.cfs_period_us":        "100000",
	} {
		if got := read("/sys/fs/cgroup", file); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
}

func TestRestartedAgentAdoptsRunningContainers(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("survivor", "sleep")
	cfg.Attempt = 2
	id := p.run(cfg)
	before := waitState(t, r, id, krt.StateRunning)

	// A new Runtime on the same containerd is the restarted agent.
	r2, err := New(context.Background(), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	list, err := r2.ListContainers(context.Background(), krt.ListFilter{PodUID: p.uid})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("listed %d containers, want 1: %+v", len(list), list)
	}
	got := list[0]
	if got.ID != id || got.State != krt.StateRunning || got.Pid != before.Pid || got.Name != "survivor" ||
		got.Attempt != 2 || got.PodName != cfg.PodName || got.PodNamespace != "default" || got.LogPath != cfg.LogPath {
		t.Errorf("adopted %+v, was %+v", got, before)
	}
	// Orphan clean-up through the new runtime.
	if err := r2.RemoveContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if err := r2.RemovePod(context.Background(), p.uid); err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, r2, p.uid, []string{id})
}

func TestImagesFromADirectoryAndBadInput(t *testing.T) {
	r := newTestRuntime(t)
	ctx := context.Background()
	dir := t.TempDir()
	src, err := os.ReadFile(buildImage(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.tar"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.tar"), []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("ignored"), 0o644); err != nil {
		t.Fatal(err)
	}
	refs, err := r.ImportDir(ctx, dir)
	if err == nil || !strings.Contains(err.Error(), "broken.tar") {
		t.Errorf("ImportDir error = %v, want one naming broken.tar", err)
	}
	if len(refs) != 1 || refs[0] != testimage.Ref {
		t.Errorf("ImportDir imported %v despite the bad file, want [%s]", refs, testimage.Ref)
	}
	if refs, err := r.ImportDir(ctx, filepath.Join(dir, "missing")); err != nil || len(refs) != 0 {
		t.Errorf("missing directory: %v %v", refs, err)
	}
	imgs, err := r.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, img := range imgs {
		found = found || img.Ref == testimage.Ref && img.Size > 0 && img.Digest != ""
	}
	if !found {
		t.Errorf("ListImages = %+v, want %s", imgs, testimage.Ref)
	}
	if img, err := r.EnsureImage(ctx, testimage.Ref, krt.PullNever); err != nil || img.Pulled {
		t.Errorf("EnsureImage of a present image with PullNever: %+v, %v; want it present, not pulled", img, err)
	}
	for ref, want := range map[string]bool{testimage.Ref: true, "skiff.test/absent:v1": false} {
		if got, err := r.ImagePresent(ctx, ref); err != nil || got != want {
			t.Errorf("ImagePresent(%s) = %v, %v; want %v", ref, got, err, want)
		}
	}
	if _, err := r.ImagePresent(ctx, "Bad Ref!"); !errors.Is(err, krt.ErrInvalidConfig) {
		t.Errorf("ImagePresent of a bad reference: %v, want ErrInvalidConfig", err)
	}
	if _, err := r.EnsureImage(ctx, "skiff.test/absent:v1", krt.PullNever); !errors.Is(err, krt.ErrImageNeverPull) {
		t.Errorf("absent image with PullNever: %v, want ErrImageNeverPull", err)
	}
	pullCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.EnsureImage(pullCtx, "skiff.invalid/absent:v1", krt.PullIfNotPresent); !errors.Is(err, krt.ErrImagePull) {
		t.Errorf("unreachable registry: %v, want ErrImagePull", err)
	}
	if _, err := r.EnsureImage(ctx, "Bad Ref!", krt.PullIfNotPresent); !errors.Is(err, krt.ErrInvalidConfig) {
		t.Errorf("bad reference: %v, want ErrInvalidConfig", err)
	}

	p := newPod(t, r)
	bad := []struct {
		name string
		edit func(*krt.ContainerConfig)
		want error
	}{
		{"missing image", func(c *krt.ContainerConfig) { c.Image = "skiff.test/absent:v1" }, krt.ErrNotFound},
		{"bad pod UID", func(c *krt.ContainerConfig) { c.PodUID = "../x" }, krt.ErrInvalidConfig},
		{"negative memory", func(c *krt.ContainerConfig) { c.Resources.MemoryLimit = -1 }, krt.ErrInvalidConfig},
		{"relative log path", func(c *krt.ContainerConfig) { c.LogPath = "x.log" }, krt.ErrInvalidConfig},
		{"relative mount target", func(c *krt.ContainerConfig) {
			c.Mounts = []krt.Mount{{HostPath: "/tmp", ContainerPath: "data"}}
		}, krt.ErrInvalidConfig},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.config("bad")
			tc.edit(&cfg)
			if _, err := r.CreateContainer(ctx, cfg); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestContainerIDIsStableAndBounded(t *testing.T) {
	a := krt.ContainerConfig{PodUID: "u1", Name: strings.Repeat("Long_Name", 10), Attempt: 3}
	if containerID(a) != containerID(a) {
		t.Error("ID not stable")
	}
	b := a
	b.Attempt = 4
	if containerID(a) == containerID(b) {
		t.Error("attempts share an ID")
	}
	if id := containerID(a); len(id) > 76 {
		t.Errorf("ID %q longer than containerd's 76", id)
	}
}

// TestLogDriverWritesCRIRecordsThatReadBack reads the log as soon as the
// exit is reported, without waiting: the exit is reported once the task is
// deleted, and the shim deletes a task only after its log driver has read
// the pipes to the end. (The shim's own file logging, no longer used, gave
// up after 2 s and lost the last lines under load.)
func TestLogDriverWritesCRIRecordsThatReadBack(t *testing.T) {
	r := newTestRuntime(t)
	p := newPod(t, r)
	cfg := p.config("crasher", "crash", "5")
	id := p.run(cfg)
	waitState(t, r, id, krt.StateExited)
	b, err := os.ReadFile(cfg.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	if !strings.Contains(raw, " stdout F about to crash\n") || !strings.Contains(raw, " stderr F crashing with exit code 5\n") {
		t.Errorf("log incomplete when the exit was reported:\n%s", raw)
	}
	var out bytes.Buffer
	if err := logs.Read(context.Background(), cfg.LogPath, logs.Options{TailLines: -1}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "about to crash\n") || !strings.Contains(got, "crashing with exit code 5\n") || strings.Contains(got, " F ") {
		t.Errorf("read back %q", got)
	}
}

func TestRuntimeRefusesAMissingOrRelativeLogDriver(t *testing.T) {
	for _, driver := range []string{"", "relative/driver"} {
		cfg := testConfig(t)
		cfg.LogDriver = driver
		_, err := New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "log driver") {
			t.Errorf("log driver %q: err %v, want one naming the log driver", driver, err)
		}
	}
}
