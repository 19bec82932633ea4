package nodejoin

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/authz/node"
	"github.com/skiffkube/skiff/apiserver/endpoints"
)

// Path is the endpoint, a path outside the resource API.
const Path = node.CredentialsPath

// DefaultTTL is how long a node certificate is valid; agents renew it
// after two thirds of that.
const DefaultTTL = 30 * 24 * time.Hour

// Request asks for a node certificate.
type Request struct {
	NodeName string `json:"nodeName"`
	// CSR is a PEM CERTIFICATE REQUEST for CN=system:node:<nodeName>,
	// O=system:nodes; a serving one also names the node's DNS names and
	// IP addresses.
	CSR []byte `json:"csr"`
	// Usage is UsageClient (the default) or UsageServing.
	Usage string `json:"usage,omitempty"`
}

// Certificate usages a Request may ask for.
const (
	// UsageClient: the node's client certificate, to talk to the API server.
	UsageClient = "client"
	// UsageServing: the node API's serving certificate, which the API
	// server verifies when it proxies logs, exec, attach and port-forward.
	// Only the node itself may ask (with its client certificate), and only
	// for its name and the addresses its Node object reports; the node CA
	// signs it, which clients do not trust for the API server.
	UsageServing = "serving"
)

// Response carries the certificate and the CA that signed it: for a
// client certificate the cluster CA, which also verifies the API server;
// for a serving one the node CA.
type Response struct {
	Certificate []byte `json:"certificate"`
	CA          []byte `json:"ca"`
}

// Signer certifies a certificate request (pki.Bundle).
type Signer interface {
	SignClientCSR(csrPEM []byte, user string, groups []string, ttl time.Duration) ([]byte, error)
	SignServingCSR(csrPEM []byte, user string, groups, allowedHosts []string, ttl time.Duration) ([]byte, error)
}

// NodeGetter reads a Node object (from the API server's store); a node
// that does not exist is a NotFound error.
type NodeGetter func(ctx context.Context, name string) (*corev1.Node, error)

// Handler serves Path. Callers get here only when the authorizer allowed
// them the path: an agent joining with the agent token (group
// system:bootstrappers, bound to system:node-bootstrapper), the admin
// (the cluster token, which agents joined with before the agent token
// existed), or a node renewing. Any of them may obtain a node's client
// certificate, as Kubernetes' CSR approver approves node client CSRs from
// bootstrappers; only the node itself obtains its serving certificate.
type Handler struct {
	Signer Signer
	// CA is the cluster CA (PEM), NodeCA the node CA that signs serving
	// certificates.
	CA, NodeCA []byte
	TTL        time.Duration
	// Nodes reads Node objects for serving certificates; without it, or
	// without NodeCA, they are not issued.
	Nodes NodeGetter
	// Log receives the warning that an agent joined with the admin's
	// token (nil: slog.Default()).
	Log *slog.Logger

	// adminWarned is when that warning was last logged (Unix seconds).
	adminWarned atomic.Int64
}

// adminJoinWarningInterval is how often an agent joining with the admin's
// token is reported at most: many hollow nodes joining at once log once.
const adminJoinWarningInterval = time.Minute

const maxRequestBytes = 64 << 10

var gr = schema.GroupResource{Resource: "nodecredentials"}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.serve(w, r); err != nil {
		endpoints.WriteError(w, err)
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return apierrors.NewMethodNotSupported(gr, strings.ToLower(r.Method))
	}
	u, ok := authn.UserFrom(r.Context())
	if !ok {
		return apierrors.NewUnauthorized("Unauthorized")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", maxRequestBytes))
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding the node credentials request: %v", err))
	}
	if errs := validation.IsDNS1123Subdomain(req.NodeName); len(errs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid nodeName %q: %s", req.NodeName, strings.Join(errs, "; ")))
	}
	self, isNode := node.NodeName(u)
	if isNode && self != req.NodeName {
		return apierrors.NewForbidden(gr, req.NodeName, fmt.Errorf("node %q may renew only its own credentials", self))
	}
	if !isNode && slices.Contains(u.Groups, bootstrap.MastersGroup) {
		h.warnAdminJoin(u, req.NodeName)
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	var cert []byte
	ca := h.CA
	switch req.Usage {
	case "", UsageClient:
		cert, err = h.Signer.SignClientCSR(req.CSR, bootstrap.NodeUserPrefix+req.NodeName, []string{bootstrap.NodesGroup}, ttl)
	case UsageServing:
		ca = h.NodeCA
		cert, err = h.signServing(r.Context(), u, req, ttl)
		if isStatus(err) {
			return err
		}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("invalid usage %q: want %q or %q", req.Usage, UsageClient, UsageServing))
	}
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	data, err := json.Marshal(Response{Certificate: cert, CA: ca})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(data)
	return nil
}

// warnAdminJoin says, at most once per adminJoinWarningInterval, that an
// agent joined with a system:masters credential: whoever holds it on a
// worker holds the whole cluster.
func (h *Handler) warnAdminJoin(u *authn.User, nodeName string) {
	now := time.Now().Unix()
	last := h.adminWarned.Load()
	if now-last < int64(adminJoinWarningInterval/time.Second) || !h.adminWarned.CompareAndSwap(last, now) {
		return
	}
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("a node agent joined with a system:masters credential (the cluster token?), which makes its machine cluster-admin; join agents with the agent token instead (<data-dir>/agent-token, skiff server --agent-token)",
		"user", u.Name, "node", nodeName)
}

func isStatus(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok
}

// signServing issues the node API's serving certificate to the node
// itself, for names and addresses its Node reports: its name, its
// Hostname/InternalDNS/ExternalDNS addresses, its InternalIP/ExternalIP
// addresses. The node writes those itself, so they may be anything, the
// API server's names and 127.0.0.1 included (where a test or a
// single-machine cluster really runs its nodes): the Signer's node CA,
// which clients do not trust, is what keeps the certificate from serving
// as the API server's.
func (h *Handler) signServing(ctx context.Context, u *authn.User, req Request, ttl time.Duration) ([]byte, error) {
	if self, isNode := node.NodeName(u); !isNode || self != req.NodeName {
		return nil, apierrors.NewForbidden(gr, req.NodeName, fmt.Errorf("a serving certificate is issued only to node %q itself, authenticated by its client certificate", req.NodeName))
	}
	if h.Nodes == nil || len(h.NodeCA) == 0 {
		return nil, apierrors.NewServiceUnavailable("this API server does not issue node serving certificates")
	}
	n, err := h.Nodes(ctx, req.NodeName)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewForbidden(gr, req.NodeName, fmt.Errorf("node %q is not registered: a serving certificate names the addresses its Node reports", req.NodeName))
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	allowed := []string{n.Name}
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS, corev1.NodeInternalIP, corev1.NodeExternalIP:
			allowed = append(allowed, a.Address)
		}
	}
	cert, err := h.Signer.SignServingCSR(req.CSR, bootstrap.NodeUserPrefix+req.NodeName, []string{bootstrap.NodesGroup}, allowed, ttl)
	if err != nil {
		return nil, apierrors.NewForbidden(gr, req.NodeName, err)
	}
	return cert, nil
}

// Client asks a server for node credentials, authenticated by a bearer
// token (joining) or by the TLS configuration's client certificate
// (renewing).
type Client struct {
	Server string
	TLS    *tls.Config
	Token  string
}

// Request sends a client certificate request and returns the server's answer.
func (c *Client) Request(ctx context.Context, nodeName string, csrPEM []byte) (*Response, error) {
	return c.Send(ctx, Request{NodeName: nodeName, CSR: csrPEM})
}

// Send sends any certificate request and returns the server's answer.
func (c *Client) Send(ctx context.Context, r Request) (*Response, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Server, "/")+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: c.TLS}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("requesting node credentials from %s: %w", c.Server, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			return nil, fmt.Errorf("requesting node credentials from %s: %d %s", c.Server, resp.StatusCode, st.Message)
		}
		return nil, fmt.Errorf("requesting node credentials from %s: %s", c.Server, resp.Status)
	}
	var out Response
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding node credentials: %w", err)
	}
	return &out, nil
}
