package nodeproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/skiffkube/skiff/apiserver/pki"
	"github.com/skiffkube/skiff/kubelet/logs"
	"github.com/skiffkube/skiff/kubelet/nodeapi"
)

// node is a node API answering for pod default/web: logs from files,
// exec of echo and exit.
type node string

func (d node) ContainerLog(_ context.Context, ns, pod, container string, previous bool) (logs.File, error) {
	p := filepath.Join(string(d), container+".log")
	if previous || ns != "default" || pod != "web" {
		return logs.File{}, fmt.Errorf("%w: previous terminated container %q in pod %q not found", logs.ErrNotFound, container, pod)
	}
	return logs.File{Path: p, Running: func() bool { return false }}, nil
}

func (d node) ExecInPod(_ context.Context, ns, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer, _ bool, _ <-chan nodeapi.TerminalSize) (int, error) {
	switch cmd[0] {
	case "echo":
		fmt.Fprintln(stdout, container+": "+strings.Join(cmd[1:], " "))
		return 0, nil
	case "exit":
		return strconv.Atoi(cmd[1])
	}
	return 0, errors.New("unknown command")
}

// AttachToPod: this node holds no container's stdio, so attach follows
// the log, as for containers without stdin.
func (d node) AttachToPod(context.Context, string, string, string, io.Reader, io.Writer, io.Writer, bool, <-chan nodeapi.TerminalSize) error {
	return nodeapi.ErrNoStdio
}

func (d node) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return errors.New("not in this test")
}

func writeStatus(w http.ResponseWriter, err error) {
	var st *apierrors.StatusError
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.ErrStatus.Code))
	json.NewEncoder(w).Encode(st.ErrStatus)
}

// setup runs a TLS node API and, in front of it, the proxy for pod
// default/web on that node, as the API server mounts it.
func setup(t *testing.T, pod *corev1.Pod) (front string) {
	t.Helper()
	b, err := pki.Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "app.log"), []byte("2026-11-30T05:00:01Z stdout F line one\n2026-11-30T05:00:02Z stdout F line two\n"), 0o644)
	nodeTLS, err := nodeapi.TLSConfig(b.Serving, b.CAPool(), nodeapi.APIServerClientUser)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go nodeapi.Serve(ctx, l, nodeTLS, nodeapi.NewHandler(node(dir)), slog.New(slog.DiscardHandler))
	t.Cleanup(cancel)
	port := l.Addr().(*net.TCPAddr).Port

	certPEM, keyPEM, err := b.IssueClientCert(nodeapi.APIServerClientUser, nil, pki.LeafValidity)
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := b.ClientTLSConfig(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(clientTLS, writeStatus)
	if err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		node := n
		if r.URL.Query().Get("hollow") != "" {
			node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow"}}
		}
		if err := p.Serve(w, r, sub, pod, node); err != nil {
			writeStatus(w, err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/namespaces/default/pods/web"
}

func webPod(containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c})
	}
	return pod
}

func TestLogs(t *testing.T) {
	pod := webPod("app", "side")
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
	base := setup(t, pod)
	cases := []struct {
		name, query string
		code        int
		want        string
	}{
		{"named container", "container=app", 200, "line one\nline two\n"},
		{"tail and timestamps", "container=app&tailLines=1&timestamps=true", 200, "2026-11-30T05:00:02Z line two\n"},
		{"no container named", "", 400, "a container name must be specified for pod web, choose one of: [app side]"},
		{"unknown container", "container=nope", 400, "container nope is not valid for pod web"},
		{"previous missing", "container=app&previous=true", 400, `previous terminated container \"app\" in pod \"web\" not found`},
		{"bad tail", "container=app&tailLines=x", 400, "tailLines"},
		{"both sinces", "container=app&sinceSeconds=1&sinceTime=2026-11-30T05:00:02Z", 400, "at most one"},
		{"waiting container", "container=side", 400, `container \"side\" in pod \"web\" is waiting to start: ImagePullBackOff`},
		{"hollow node", "container=app&hollow=1", 503, `node \"hollow\" serves no node API`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(base + "/log?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
				t.Errorf("%d %s, want %d with %q", resp.StatusCode, body, tc.code, tc.want)
			}
		})
	}
}

// exec through the proxy as kubectl 1.30+ (WebSocket v5, translated to
// SPDY for the node) and older kubectl (SPDY straight through) do it.
func TestExecOverWebSocketAndSPDY(t *testing.T) {
	base := setup(t, webPod("app"))
	run := func(t *testing.T, websocket bool, cmd ...string) (string, error) {
		q := url.Values{"command": cmd, "stdout": {"true"}, "stderr": {"true"}}
		u, _ := url.Parse(base + "/exec?" + q.Encode())
		var ex remotecommand.Executor
		var err error
		if websocket {
			ex, err = remotecommand.NewWebSocketExecutor(&rest.Config{Host: u.Scheme + "://" + u.Host}, "GET", u.String())
		} else {
			ex, err = remotecommand.NewSPDYExecutor(&rest.Config{Host: u.Scheme + "://" + u.Host}, "POST", u)
		}
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		return out.String(), err
	}
	for _, ws := range []bool{true, false} {
		t.Run(fmt.Sprintf("websocket=%v", ws), func(t *testing.T) {
			out, err := run(t, ws, "echo", "hi")
			if err != nil || out != "app: hi\n" {
				t.Errorf("echo: %q %v", out, err)
			}
			_, err = run(t, ws, "exit", "7")
			var exit utilexec.ExitError
			if !errors.As(err, &exit) || exit.ExitStatus() != 7 {
				t.Errorf("exit 7: %v", err)
			}
		})
	}
	resp, err := http.Post(base+"/exec?command=echo&stdout=true", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("exec without an upgrade: %d, want 400", resp.StatusCode)
	}
	resp, err = http.Post(base+"/exec?stdout=true", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "at least one command") {
		t.Errorf("exec without a command: %d %s", resp.StatusCode, body)
	}
}
