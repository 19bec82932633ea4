package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Result is one probe's verdict.
type Result int

const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}

// ExecFunc runs a command in the container, writing its stdout and stderr
// to out, and returns its exit code.
type ExecFunc func(ctx context.Context, cmd []string, out io.Writer) (int, error)

// Target is what a probe acts on.
type Target struct {
	PodIP     string
	Container *corev1.Container
	Exec      ExecFunc
	// Failed, if set, hears of every failed probe run with its output,
	// before thresholds apply (the kubelet's Unhealthy events).
	Failed func(kind Kind, output string)
	// Changed, if set, hears when the probe's verdict changes (the
	// kubelet's probe result updates, which sync the pod at once).
	Changed func(kind Kind)
}

// maxExecOutput caps what an exec probe's output contributes to its
// failure reason, as the kubelet's 10 KiB.
const maxExecOutput = 10 << 10

// Once runs the probe a single time within its timeout and says why it failed.
func Once(ctx context.Context, p *corev1.Probe, t Target) (Result, string) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := p.ProbeHandler
	switch {
	case h.Exec != nil:
		if t.Exec == nil {
			return Failure, "exec probes are not available"
		}
		out := &limitedBuffer{max: maxExecOutput}
		code, err := t.Exec(ctx, h.Exec.Command, out)
		if err != nil {
			if ctx.Err() != nil {
				return Failure, fmt.Sprintf("command %q timed out", strings.Join(h.Exec.Command, " "))
			}
			return Failure, err.Error()
		}
		if code != 0 {
			// The kubelet reports the command's output; say at least
			// how it ended when it printed nothing.
			if o := out.String(); strings.TrimSpace(o) != "" {
				return Failure, o
			}
			return Failure, fmt.Sprintf("command %q exited with %d", strings.Join(h.Exec.Command, " "), code)
		}
		return Success, ""
	case h.HTTPGet != nil:
		return httpProbe(ctx, h.HTTPGet, t)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return Failure, err.Error()
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return Failure, err.Error()
		}
		conn.Close()
		return Success, ""
	case h.GRPC != nil:
		return grpcProbe(ctx, h.GRPC, t)
	}
	return Failure, "probe has no handler"
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal < 1 || p.IntVal > 65535 {
			return 0, fmt.Errorf("port %d out of range", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	return 0, fmt.Errorf("port %q names no container port", p.StrVal)
}

func httpProbe(ctx context.Context, g *corev1.HTTPGetAction, t Target) (Result, string) {
	port, err := resolvePort(g.Port, t.Container)
	if err != nil {
		return Failure, err.Error()
	}
	host := g.Host
	if host == "" {
		host = t.PodIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	full := u.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, full, nil)
	if err != nil {
		return Failure, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/skiff")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	// Like the kubelet: no certificate checks, no keep-alive, at most a few
	// redirects.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		return Failure, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return Success, ""
}

func grpcProbe(ctx context.Context, g *corev1.GRPCAction, t Target) (Result, string) {
	if g.Port < 1 || g.Port > 65535 {
		return Failure, fmt.Sprintf("port %d out of range", g.Port)
	}
	conn, err := grpc.NewClient(net.JoinHostPort(t.PodIP, strconv.Itoa(int(g.Port))),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("kube-probe/skiff"))
	if err != nil {
		return Failure, err.Error()
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return Failure, err.Error()
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, "service unhealthy (responded with " + resp.GetStatus().String() + ")"
	}
	return Success, ""
}
