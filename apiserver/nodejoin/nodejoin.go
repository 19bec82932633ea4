package nodejoin

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

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
	// O=system:nodes.
	CSR []byte `json:"csr"`
}

// Response carries the certificate and the CA that verifies the server.
type Response struct {
	Certificate []byte `json:"certificate"`
	CA          []byte `json:"ca"`
}

// Signer certifies a certificate request (pki.Bundle).
type Signer interface {
	SignClientCSR(csrPEM []byte, user string, groups []string, ttl time.Duration) ([]byte, error)
}

// Handler serves Path. Callers get here only when the authorizer allowed
// them the path: the cluster token's admin, or a node renewing.
type Handler struct {
	Signer Signer
	CA     []byte
	TTL    time.Duration
}

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
	if self, isNode := node.NodeName(u); isNode && self != req.NodeName {
		return apierrors.NewForbidden(gr, req.NodeName, fmt.Errorf("node %q may renew only its own credentials", self))
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	cert, err := h.Signer.SignClientCSR(req.CSR, bootstrap.NodeUserPrefix+req.NodeName, []string{bootstrap.NodesGroup}, ttl)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	data, err := json.Marshal(Response{Certificate: cert, CA: h.CA})
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(data)
	return nil
}

// Client asks a server for node credentials, authenticated by a bearer
// token (joining) or by the TLS configuration's client certificate
// (renewing).
type Client struct {
	Server string
	TLS    *tls.Config
	Token  string
}

// Request sends the certificate request and returns the server's answer.
func (c *Client) Request(ctx context.Context, nodeName string, csrPEM []byte) (*Response, error) {
	body, err := json.Marshal(Request{NodeName: nodeName, CSR: csrPEM})
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
