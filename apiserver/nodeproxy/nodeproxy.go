package nodeproxy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/proxy"
	proxyutil "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// Proxy reaches node APIs.
type Proxy struct {
	transport  *http.Transport
	writeError func(http.ResponseWriter, error)
}

// New returns a proxy that dials nodes with tlsCfg: the API server's client
// certificate and the CA that signed the nodes' serving certificates.
// writeError answers with an error once a stream's handler has taken the
// request (the API server's Status writer).
func New(tlsCfg *tls.Config, writeError func(http.ResponseWriter, error)) (*Proxy, error) {
	if writeError == nil {
		return nil, errors.New("nodeproxy: an error writer is required")
	}
	if tlsCfg == nil || len(tlsCfg.Certificates) == 0 || tlsCfg.RootCAs == nil {
		return nil, errors.New("nodeproxy: a TLS configuration with a client certificate and root CAs is required")
	}
	cfg := tlsCfg.Clone()
	// Streams upgrade HTTP/1.1 connections.
	cfg.NextProtos = []string{"http/1.1"}
	return &Proxy{writeError: writeError, transport: &http.Transport{
		TLSClientConfig:       cfg,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
	}}, nil
}

// Serve answers one of the node subresources of pod, running on node.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, subresource string, pod *corev1.Pod, node *corev1.Node) error {
	base, err := nodeBase(pod, node)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	switch subresource {
	case "log":
		return p.serveLog(w, r, base, pod, q)
	case "exec", "attach":
		return p.serveStream(w, r, base, pod, subresource, q)
	case "portforward":
		return p.servePortForward(w, r, base, pod, q)
	}
	return apierrors.NewNotFound(podsResource, pod.Name)
}

// nodeBase is https://<node address>:<node API port>.
func nodeBase(pod *corev1.Pod, node *corev1.Node) (*url.URL, error) {
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q serves no node API (a hollow node, or its agent has not reported the port yet)", node.Name))
	}
	host := ""
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range node.Status.Addresses {
			if a.Type == want && a.Address != "" && host == "" {
				host = a.Address
			}
		}
	}
	if host == "" {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q reports no address", node.Name))
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// container picks the named container, or the only one; the messages are
// Kubernetes'.
func container(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 && len(pod.Spec.InitContainers) == 0 && len(pod.Spec.EphemeralContainers) == 0 {
			return pod.Spec.Containers[0].Name, nil
		}
		var names []string
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
		if len(pod.Spec.InitContainers) > 0 {
			var inits []string
			for _, c := range pod.Spec.InitContainers {
				inits = append(inits, c.Name)
			}
			msg += fmt.Sprintf(" or one of the init containers: %v", inits)
		}
		return "", apierrors.NewBadRequest(msg)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return name, nil
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return name, nil
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// logParams are the PodLogOptions the node API understands.
var logParams = []string{"follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

func (p *Proxy) serveLog(w http.ResponseWriter, r *http.Request, base *url.URL, pod *corev1.Pod, q url.Values) error {
	name, err := container(pod, q.Get("container"))
	if err != nil {
		return err
	}
	if err := validateLogOptions(q); err != nil {
		return err
	}
	if previous, _ := strconv.ParseBool(q.Get("previous")); !previous {
		if err := waitingToStart(pod, name); err != nil {
			return err
		}
	}
	out := url.Values{}
	for _, k := range logParams {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	loc := *base
	loc.Path = "/containerLogs/" + pod.Namespace + "/" + pod.Name + "/" + name
	loc.RawQuery = out.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, loc.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reaching the node API of %s: %v", pod.Spec.NodeName, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := strings.TrimSpace(string(body))
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusBadRequest:
			// kubectl shows these as Kubernetes does: a bad request
			// naming what is missing.
			return apierrors.NewBadRequest(msg)
		}
		return apierrors.NewGenericServerResponse(resp.StatusCode, "get", podsResource, pod.Name, msg, 0, false)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32*1024)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			return nil // the status line is out: nothing more can be said
		}
	}
}

// waitingToStart is Kubernetes' answer for the log of a container that has
// not run yet.
func waitingToStart(pod *corev1.Pod, name string) error {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name != name || st.State.Waiting == nil || st.LastTerminationState.Terminated != nil || st.ContainerID != "" {
				continue
			}
			return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, pod.Name, st.State.Waiting.Reason))
		}
	}
	return nil
}

func validateLogOptions(q url.Values) error {
	for _, k := range []string{"follow", "previous", "timestamps", "insecureSkipTLSVerifyBackend"} {
		if v := q.Get(k); v != "" {
			if _, err := strconv.ParseBool(v); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("%s: invalid boolean value %q", k, v))
			}
		}
	}
	for _, k := range []string{"tailLines", "sinceSeconds", "limitBytes"} {
		if v := q.Get(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("%s: invalid integer value %q", k, v))
			}
			if n < 0 || (n == 0 && k != "tailLines") {
				return apierrors.NewBadRequest(fmt.Sprintf("%s: must be greater than 0", k))
			}
		}
	}
	if q.Get("sinceSeconds") != "" && q.Get("sinceTime") != "" {
		return apierrors.NewBadRequest("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if v := q.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("sinceTime: invalid RFC 3339 time %q", v))
		}
	}
	return nil
}

// responder writes proxy errors as Status objects.
type responder struct {
	write func(http.ResponseWriter, error)
}

func (rs responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		rs.write(w, err) // e.g. "Upgrade request required"
		return
	}
	rs.write(w, apierrors.NewServiceUnavailable(fmt.Sprintf("error proxying to the node API: %v", err)))
}

func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("%s: invalid boolean value %q", name, v))
	}
	return b, nil
}

// serveStream proxies exec and attach: SPDY straight through, WebSocket
// v5 translated into SPDY towards the node.
func (p *Proxy) serveStream(w http.ResponseWriter, r *http.Request, base *url.URL, pod *corev1.Pod, kind string, q url.Values) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		verb := "exec into"
		if kind == "attach" {
			verb = "attach to"
		}
		return apierrors.NewBadRequest(fmt.Sprintf("cannot %s a container in a completed pod; current phase is %s", verb, pod.Status.Phase))
	}
	name, err := container(pod, q.Get("container"))
	if err != nil {
		return err
	}
	var opts proxyutil.Options
	if opts.Stdin, err = boolParam(q, "stdin"); err != nil {
		return err
	}
	if opts.Stdout, err = boolParam(q, "stdout"); err != nil {
		return err
	}
	if opts.Stderr, err = boolParam(q, "stderr"); err != nil {
		return err
	}
	if opts.Tty, err = boolParam(q, "tty"); err != nil {
		return err
	}
	if opts.Tty && opts.Stderr {
		// With a terminal stderr is merged into stdout, as Kubernetes does.
		opts.Stderr = false
	}
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	out := url.Values{}
	if kind == "exec" {
		cmd := q["command"]
		if len(cmd) == 0 {
			return apierrors.NewBadRequest("you must specify at least one command for the container")
		}
		out["command"] = cmd
	}
	for param, on := range map[string]bool{"input": opts.Stdin, "output": opts.Stdout, "error": opts.Stderr, "tty": opts.Tty} {
		if on {
			out.Set(param, "1")
		}
	}
	loc := *base
	loc.Path = "/" + kind + "/" + pod.Namespace + "/" + pod.Name + "/" + name
	loc.RawQuery = out.Encode()
	upgrade := p.upgradeHandler(&loc)
	var h http.Handler = upgrade
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		h = proxyutil.NewStreamTranslatorHandler(&loc, p.transport, 0, opts)
	}
	r.Header.Del("Authorization")
	h.ServeHTTP(w, r)
	return nil
}

func (p *Proxy) servePortForward(w http.ResponseWriter, r *http.Request, base *url.URL, pod *corev1.Pod, q url.Values) error {
	if pod.Status.Phase != corev1.PodRunning {
		return apierrors.NewBadRequest(fmt.Sprintf("unable to forward ports of pod %s: its phase is %q, not Running", pod.Name, pod.Status.Phase))
	}
	loc := *base
	loc.Path = "/portForward/" + pod.Namespace + "/" + pod.Name
	out := url.Values{}
	for _, port := range q["ports"] {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid port %q", port))
		}
		out.Add("port", port)
	}
	loc.RawQuery = out.Encode()
	var h http.Handler = p.upgradeHandler(&loc)
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		h = proxyutil.NewTunnelingHandler(h)
	}
	r.Header.Del("Authorization")
	h.ServeHTTP(w, r)
	return nil
}

func (p *Proxy) upgradeHandler(loc *url.URL) *proxy.UpgradeAwareHandler {
	h := proxy.NewUpgradeAwareHandler(loc, p.transport, false, true, responder{write: p.writeError})
	h.UseLocationHost = true
	return h
}
