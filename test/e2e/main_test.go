package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// skiffBin is the binary built by TestMain.
var skiffBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "skiff-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	skiffBin = filepath.Join(dir, "skiff")
	// Built as the README says (its build tags keep the binary small).
	cmd := exec.Command("go", "build", "-tags", "grpcnotrace,nomsgpack", "-o", skiffBin, "github.com/skiffkube/skiff/cmd/skiff")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building skiff:", err)
		return 1
	}
	return m.Run()
}

// needOrSkip skips a test whose prerequisite is missing, except in CI
// (CI=true), where nothing may skip.
func needOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required in CI)", msg)
	}
	t.Skip(msg)
}

// server is a running `skiff server`.
type server struct {
	dataDir    string
	kubeconfig string
	url        string
	cmd        *exec.Cmd
	log        *lockedWriter // the process writes it while tests read it
	// stop interrupts the server and waits for it to exit (at most once).
	stop func()
	// exited is closed once the process has exited.
	exited <-chan struct{}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs the skiff binary on a fresh data dir until the test ends,
// without a node agent; extra are more `skiff server` flags.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	return startServerIn(t, t.TempDir(), append([]string{"--disable-agent"}, extra...)...)
}

// startServerIn runs the skiff binary on dir with extra flags until the
// test ends.
func startServerIn(t testing.TB, dir string, extra ...string) *server {
	t.Helper()
	return startServerOn(t, dir, freePort(t), extra...)
}

// startServerOn is startServerIn listening on port, so a server can be
// restarted where its clients expect it.
func startServerOn(t testing.TB, dir string, port int, extra ...string) *server {
	t.Helper()
	s := &server{dataDir: dir, kubeconfig: filepath.Join(dir, "kubeconfig.yaml"), url: fmt.Sprintf("https://127.0.0.1:%d", port)}
	args := append([]string{"server", "--data-dir", dir, "--bind-address", "127.0.0.1",
		"--https-listen-port", fmt.Sprint(port), "--write-kubeconfig", s.kubeconfig}, extra...)
	p := runSkiff(t, 20*time.Second, args...)
	s.cmd, s.log, s.stop, s.exited = p.cmd, p.log, p.stop, p.exited
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			t.Fatalf("skiff server exited early:\n%s", s.log.String())
		default:
		}
		if _, err := os.Stat(s.kubeconfig); err == nil {
			if resp, err := client.Get(s.url + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("skiff server not ready after 30s:\n%s", s.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kubectl runs one kubectl release against a server with its own cache dir.
type kubectl struct {
	t        testing.TB
	bin      string
	kc       string
	cacheDir string
}

func newKubectl(t testing.TB, s *server, minor int) *kubectl {
	t.Helper()
	bin := fmt.Sprintf("/usr/lib/google-cloud-sdk/bin/kubectl.1.%d", minor)
	if _, err := os.Stat(bin); err != nil {
		needOrSkip(t, "kubectl 1.%d is not installed at %s", minor, bin)
	}
	return &kubectl{t: t, bin: bin, kc: s.kubeconfig, cacheDir: t.TempDir()}
}

// withFreshCache is the same kubectl with an empty discovery cache, so its
// next command reads discovery from the server.
func (k *kubectl) withFreshCache() *kubectl {
	c := *k
	c.cacheDir = k.t.TempDir()
	return &c
}

// run returns combined output and whether kubectl succeeded.
func (k *kubectl) run(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	full := append([]string{"--kubeconfig", k.kc, "--cache-dir", k.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, k.bin, full...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ok runs kubectl and fails the test if it fails.
func (k *kubectl) ok(args ...string) string {
	k.t.Helper()
	out, err := k.run("", args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// okIn is ok with a manifest on stdin (-f -).
func (k *kubectl) okIn(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// fails runs kubectl, expects failure, and returns the output.
func (k *kubectl) fails(stdin string, args ...string) string {
	k.t.Helper()
	out, err := k.run(stdin, args...)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded, want an error:\n%s", strings.Join(args, " "), out)
	}
	return out
}

func contains(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// background is a kubectl command that runs until stopped (get -w).
type background struct {
	t    testing.TB
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// start runs kubectl in the background; the test's end stops it.
func (k *kubectl) start(args ...string) *background {
	k.t.Helper()
	full := append([]string{"--kubeconfig", k.kc, "--cache-dir", k.cacheDir}, args...)
	b := &background{t: k.t, cmd: exec.Command(k.bin, full...), out: &syncBuffer{}, done: make(chan struct{})}
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		k.t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	k.t.Cleanup(b.stop)
	return b
}

// waitFor waits until the output holds want, failing after 15s or when
// kubectl exits first.
func (b *background) waitFor(want string) {
	b.t.Helper()
	deadline := time.After(15 * time.Second)
	for !strings.Contains(b.out.String(), want) {
		select {
		case <-b.done:
			if strings.Contains(b.out.String(), want) {
				return
			}
			b.t.Fatalf("kubectl %s exited before printing %q:\n%s", strings.Join(b.cmd.Args[1:], " "), want, b.out.String())
		case <-deadline:
			b.t.Fatalf("kubectl %s did not print %q within 15s:\n%s", strings.Join(b.cmd.Args[1:], " "), want, b.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the command.
func (b *background) stop() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

// runAgent runs `skiff agent args...` until the test ends: then SIGINT
// (the agent cordons its nodes and stops), SIGKILL if it has not exited
// within grace. Its output is logged when the test failed.
func runAgent(t testing.TB, grace time.Duration, args ...string) *exec.Cmd {
	t.Helper()
	return runSkiff(t, grace, append([]string{"agent"}, args...)...).cmd
}

// process is a running skiff command.
type process struct {
	cmd *exec.Cmd
	log *lockedWriter // the process writes it while tests read it
	// stop interrupts the process and waits for it to exit, killing it
	// after its grace period (at most once).
	stop func()
	// exited is closed once the process has exited.
	exited <-chan struct{}
}

// runSkiff runs the skiff binary with args until the test ends (or stop),
// and shows its output if the test failed.
func runSkiff(t testing.TB, grace time.Duration, args ...string) *process {
	t.Helper()
	p := &process{log: &lockedWriter{w: &strings.Builder{}}}
	p.cmd = exec.Command(skiffBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	p.exited = exited
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			_ = p.cmd.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(grace):
				_ = p.cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("skiff %s log:\n%s", args[0], p.log.String())
		}
	})
	return p
}
