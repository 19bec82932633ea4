package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// server answers /ok with 200, /redirect with a redirect to /ok and
// everything else with 500, on 127.0.0.1.
func server(t *testing.T) (ip string, port int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Probe") == "deny" {
			w.WriteHeader(http.StatusForbidden)
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ = strconv.Atoi(p)
	return host, port
}

func TestOnceHandlers(t *testing.T) {
	ip, port := server(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	exec := func(_ context.Context, cmd []string, out io.Writer) (int, error) {
		switch cmd[0] {
		case "true":
			return 0, nil
		case "false":
			fmt.Fprint(out, "not healthy\n")
			return 1, nil
		}
		return 0, errors.New("no such command")
	}
	get := func(path string, port intstr.IntOrString, headers ...corev1.HTTPHeader) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers}}
	}
	cases := []struct {
		name    string
		handler corev1.ProbeHandler
		want    Result
	}{
		{"http 200", get("/ok", intstr.FromInt32(int32(port))), Success},
		{"http by port name", get("/ok", intstr.FromString("http")), Success},
		{"http redirect followed", get("/redirect", intstr.FromInt32(int32(port))), Success},
		{"http 500", get("/broken", intstr.FromInt32(int32(port))), Failure},
		{"http header sent", get("/ok", intstr.FromInt32(int32(port)), corev1.HTTPHeader{Name: "X-Probe", Value: "deny"}), Failure},
		{"http unknown port name", get("/ok", intstr.FromString("nope")), Failure},
		{"http refused", get("/ok", intstr.FromInt32(int32(closedPort))), Failure},
		{"tcp open", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, Success},
		{"tcp closed", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort))}}, Failure},
		{"exec exit 0", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, Success},
		{"exec exit 1", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, Failure},
		{"exec error", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"missing"}}}, Failure},
		{"grpc nothing listening", corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(closedPort)}}, Failure},
		{"no handler", corev1.ProbeHandler{}, Failure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Probe{ProbeHandler: tc.handler, TimeoutSeconds: 10}
			got, reason := Once(context.Background(), p, Target{PodIP: ip, Container: container, Exec: exec})
			if got != tc.want {
				t.Errorf("result %s (%s), want %s", got, reason, tc.want)
			}
			if got == Failure && reason == "" {
				t.Error("failure without a reason")
			}
		})
	}
	// The reasons read as the kubelet's, which become "<Kind> probe
	// failed: <reason>" events.
	for _, tc := range []struct {
		handler corev1.ProbeHandler
		want    string
	}{
		{corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, "not healthy\n"},
		{get("/broken", intstr.FromInt32(int32(port))), "HTTP probe failed with statuscode: 500"},
	} {
		if _, reason := Once(context.Background(), &corev1.Probe{ProbeHandler: tc.handler}, Target{PodIP: ip, Exec: exec}); reason != tc.want {
			t.Errorf("failure reason %q, want %q", reason, tc.want)
		}
	}
}

// waitResult polls until the key's result is want.
func waitResult(t *testing.T, m *Manager, key Key, want Result) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if got, _ := m.Result(key); got == want {
			return
		}
		if time.Now().After(deadline) {
			got, reason := m.Result(key)
			t.Fatalf("%v: result %s (%s), want %s", key, got, reason, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkersApplyThresholdsAndGates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(ctx)
	var healthy atomic.Bool
	var calls atomic.Int32
	exec := func(context.Context, []string, io.Writer) (int, error) {
		calls.Add(1)
		if healthy.Load() {
			return 0, nil
		}
		return 1, nil
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, FailureThreshold: 2, SuccessThreshold: 1, TimeoutSeconds: 1}
	var failedRuns atomic.Int32
	target := Target{Exec: exec, Failed: func(kind Kind, output string) {
		if kind == Liveness && output != "" {
			failedRuns.Add(1)
		}
	}}

	ready := Key{ContainerID: "c1", Kind: Readiness}
	live := Key{ContainerID: "c1", Kind: Liveness}
	if got, _ := m.Result(ready); got != Unknown {
		t.Errorf("before Ensure: %s", got)
	}
	var started atomic.Bool
	m.Ensure(ready, probe, target, started.Load)
	m.Ensure(live, probe, target, started.Load)
	if got, _ := m.Result(ready); got != Failure {
		t.Errorf("readiness starts as %s, want failure (not ready)", got)
	}
	if got, _ := m.Result(live); got != Success {
		t.Errorf("liveness starts as %s, want success (alive)", got)
	}
	time.Sleep(50 * time.Millisecond)
	if calls.Load() != 0 {
		t.Errorf("probes ran %d times before the gate opened", calls.Load())
	}
	healthy.Store(true)
	started.Store(true)
	waitResult(t, m, ready, Success)
	healthy.Store(false)
	waitResult(t, m, live, Failure)
	waitResult(t, m, ready, Failure)
	if _, reason := m.Result(live); reason == "" {
		t.Error("liveness failure has no reason")
	}
	// Every failed run is reported (FailureThreshold 2: at least two
	// before the verdict), not only the verdict.
	if n := failedRuns.Load(); n < 2 {
		t.Errorf("Failed heard of %d failed liveness runs, want at least 2", n)
	}

	m.Ensure(ready, probe, target, nil) // already running: no second worker
	if m.Len() != 2 {
		t.Errorf("%d workers, want 2", m.Len())
	}
	m.Prune(func(id string) bool { return id != "c1" })
	if m.Len() != 0 {
		t.Errorf("%d workers after prune", m.Len())
	}
	if got, _ := m.Result(ready); got != Unknown {
		t.Errorf("pruned key reports %s", got)
	}
}

func TestStartupProbeStopsOnceSucceeded(t *testing.T) {
	m := NewManager(context.Background())
	var calls atomic.Int32
	exec := func(context.Context, []string, io.Writer) (int, error) { calls.Add(1); return 0, nil }
	key := Key{ContainerID: "c2", Kind: Startup}
	if got, _ := m.Result(key); got != Unknown {
		t.Fatal(got)
	}
	m.Ensure(key, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}, PeriodSeconds: 1}, Target{Exec: exec}, nil)
	waitResult(t, m, key, Success)
	n := calls.Load()
	time.Sleep(1500 * time.Millisecond)
	if calls.Load() != n {
		t.Errorf("startup probe kept running after success (%d → %d calls)", n, calls.Load())
	}
	m.Prune(func(string) bool { return false })
}
