package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/pki"
)

// client is a raw HTTPS client authenticated as admin with the bearer token.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
	anon bool
}

func newClient(t *testing.T, srv *apiservertest.Running) *client {
	tc, err := rest.TLSConfigFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	// Authenticate with the token, not the client certificate.
	tc.Certificates, tc.GetClientCertificate = nil, nil
	return &client{t: t, base: srv.URL, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}}
}

func (c *client) do(method, path, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if !c.anon {
		req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, data
}

func status(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("reply is not a Status (%v): %s", err, data)
	}
	return st
}

// TestBadInput sends malformed and oversized requests: each gets a clear
// 4xx Status and nothing is written.
func TestBadInput(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []struct {
		name, method, path, ctype, body string
		code                            int
		reason                          metav1.StatusReason
		msg                             string
	}{
		{"malformed JSON", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":`, 400, metav1.StatusReasonBadRequest, "cannot be handled as a ConfigMap"},
		{"malformed YAML", "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", "a: [b", 400, metav1.StatusReasonBadRequest, "cannot be handled as a ConfigMap"},
		{"unknown media type", "POST", "/api/v1/namespaces/default/configmaps", "text/csv", "a,b", 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"garbage protobuf", "POST", "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\xff\xff", 400, metav1.StatusReasonBadRequest, ""},
		{"deeply nested JSON", "POST", "/api/v1/namespaces/default/configmaps", "application/json", deep, 400, metav1.StatusReasonBadRequest, ""},
		{"wrong apiVersion", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, "does not match the expected API version"},
		{"wrong kind", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, "does not match the expected kind"},
		{"name not DNS-1123", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}`, 422, metav1.StatusReasonInvalid, "metadata.name: Invalid value"},
		{"missing name", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap"}`, 422, metav1.StatusReasonInvalid, "name or generateName is required"},
		{"unknown resource", "GET", "/api/v1/namespaces/default/gizmos", "", "", 404, metav1.StatusReasonNotFound, ""},
		{"unknown group", "GET", "/apis/nope.example.com/v1/things", "", "", 404, metav1.StatusReasonNotFound, ""},
		{"namespace missing", "POST", "/api/v1/namespaces/absent/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 404, metav1.StatusReasonNotFound, `namespaces "absent" not found`},
		{"bad label selector", "GET", "/api/v1/pods?labelSelector=a%20in%20(", "", "", 400, metav1.StatusReasonBadRequest, ""},
		{"unsupported field selector", "GET", "/api/v1/configmaps?fieldSelector=data.x%3Dy", "", "", 400, metav1.StatusReasonBadRequest, "field label not supported: data.x"},
		{"bad patch type", "PATCH", "/api/v1/namespaces/default", "text/plain", "{}", 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"bad continue", "GET", "/api/v1/configmaps?limit=1&continue=zzz", "", "", 400, metav1.StatusReasonBadRequest, "continue key is not valid"},
		{"oversized body", "POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 3<<20) + `"}}`, 413, metav1.StatusReasonRequestEntityTooLarge, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := c.do(tc.method, tc.path, tc.ctype, []byte(tc.body))
			if resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.code, data)
			}
			st := status(t, data)
			if int(st.Code) != tc.code || st.Reason != tc.reason {
				t.Errorf("Status code %d reason %q, want %d %q", st.Code, st.Reason, tc.code, tc.reason)
			}
			if !strings.Contains(st.Message, tc.msg) {
				t.Errorf("message %q lacks %q", st.Message, tc.msg)
			}
		})
	}
	_, data := c.do("GET", "/api/v1/namespaces/default/configmaps", "", nil)
	var list struct{ Items []any }
	if err := json.Unmarshal(data, &list); err != nil || len(list.Items) != 0 {
		t.Errorf("bad requests wrote objects: %s", data)
	}
}

// TestAuthentication: anonymous requests get 401 except health and version;
// an unknown token is 401; the admin token and client certificate work.
func TestAuthentication(t *testing.T) {
	srv := apiservertest.Start(t)
	anon := newClient(t, srv)
	anon.anon = true
	for _, p := range []string{"/livez", "/readyz", "/version"} {
		if resp, data := anon.do("GET", p, "", nil); resp.StatusCode != 200 {
			t.Errorf("anonymous %s: %d %s", p, resp.StatusCode, data)
		}
	}
	for _, p := range []string{"/api", "/apis", "/api/v1/namespaces", "/metrics", "/openapi/v3"} {
		resp, data := anon.do("GET", p, "", nil)
		if resp.StatusCode != 401 || status(t, data).Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("anonymous %s: %d %s, want 401 Unauthorized", p, resp.StatusCode, data)
		}
	}
	resp, _ := anon.do("GET", "/api/v1/namespaces", "", nil, "Authorization", "Bearer wrong")
	if resp.StatusCode != 401 {
		t.Errorf("wrong token: %d, want 401", resp.StatusCode)
	}
	if resp, data := newClient(t, srv).do("GET", "/api/v1/namespaces", "", nil); resp.StatusCode != 200 {
		t.Errorf("admin token: %d %s", resp.StatusCode, data)
	}
	tc, err := rest.TLSConfigFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	r, err := hc.Get(srv.URL + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Errorf("admin client certificate: %d", r.StatusCode)
	}
	var v struct{ Major, Minor, GitVersion string }
	_, data := anon.do("GET", "/version", "", nil)
	if err := json.Unmarshal(data, &v); err != nil || v.Major != "1" || v.Minor != "33" || v.GitVersion != "v1.33.0" {
		t.Errorf("/version = %s", data)
	}
}

// TestAnonymousPathsArePublicInfoViewers: an unauthenticated request is
// served exactly where Kubernetes' system:public-info-viewer ClusterRole
// (bound to system:unauthenticated) lets it: get /healthz, /livez, /readyz,
// /version and /version/; anything else, the health checks' own paths
// included, is a 401 in skiff.
func TestAnonymousPathsArePublicInfoViewers(t *testing.T) {
	srv := apiservertest.Start(t)
	anon := newClient(t, srv)
	anon.anon = true
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version", "/version/"} {
		if resp, data := anon.do("GET", p, "", nil); resp.StatusCode != 200 {
			t.Errorf("anonymous GET %s: %d %s, want 200", p, resp.StatusCode, data)
		}
	}
	var v struct{ GitVersion string }
	if _, data := anon.do("GET", "/version/", "", nil); json.Unmarshal(data, &v) != nil || v.GitVersion != "v1.33.0" {
		t.Errorf("/version/ = %s, want the version", data)
	}
	for _, req := range [][2]string{
		{"GET", "/livez/ping"}, {"GET", "/readyz/ping"}, {"GET", "/healthz/ping"}, {"GET", "/healthz/"}, {"GET", "/livez/"},
		{"GET", "/version/x"}, {"POST", "/version"}, {"DELETE", "/version/"},
	} {
		resp, data := anon.do(req[0], req[1], "", nil)
		if resp.StatusCode != 401 || status(t, data).Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("anonymous %s %s: %d %s, want 401 Unauthorized", req[0], req[1], resp.StatusCode, data)
		}
	}
}

// TestClientCertWithoutCommonName: a client certificate of the cluster CA
// with an empty CommonName names nobody, and is no credential rather than a
// failed one (Kubernetes' x509 CommonNameUserConversion answers "not
// authenticated" without an error): a bearer token sent with it
// authenticates the request, and without one the request is
// unauthenticated, a 401 outside the public paths.
func TestClientCertWithoutCommonName(t *testing.T) {
	srv := apiservertest.Start(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true,
	}, srv.Bundle.CACert, &key.PublicKey, srv.Bundle.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv)
	c.hc.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
	if resp, data := c.do("GET", "/api/v1/namespaces", "", nil); resp.StatusCode != 200 {
		t.Errorf("certificate without a CommonName and the admin token: %d %s, want 200", resp.StatusCode, data)
	}
	c.anon = true
	resp, data := c.do("GET", "/api/v1/namespaces", "", nil)
	if st := status(t, data); resp.StatusCode != 401 || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" {
		t.Errorf("certificate without a CommonName alone: %d %s, want 401 Unauthorized", resp.StatusCode, data)
	}
	if resp, data := c.do("GET", "/version", "", nil); resp.StatusCode != 200 {
		t.Errorf("certificate without a CommonName on /version: %d %s, want 200", resp.StatusCode, data)
	}
}

// TestFailedCertificateWithToken: a client certificate that fails
// verification (expired, or from another CA) does not stop a valid bearer
// token sent with it from authenticating the request, as Kubernetes' union
// authenticator tries every authenticator and fails only when none
// succeeds. With a bad token too, the 401 says why each failed.
func TestFailedCertificateWithToken(t *testing.T) {
	srv := apiservertest.Start(t)
	other, err := pki.Ensure(filepath.Join(t.TempDir(), "other"), nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(caCert *x509.Certificate, caKey crypto.Signer, notBefore, notAfter time.Time) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "mallory"},
			NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true,
		}, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	now := time.Now()
	for _, tc := range []struct {
		name, reason string
		cert         tls.Certificate
	}{
		{"expired", "expired", leaf(srv.Bundle.CACert, srv.Bundle.CAKey, now.Add(-2*time.Hour), now.Add(-time.Hour))},
		{"from another CA", "certificate signed by unknown authority", leaf(other.CACert, other.CAKey, now.Add(-time.Minute), now.Add(time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, srv)
			// Offer the certificate whatever CAs the server names as
			// acceptable, as client-go (so kubectl) does through
			// GetClientCertificate. With Certificates a Go client sends
			// only one whose issuer is among them, so a certificate from
			// another CA (named skiff-ca@<second> too) was sent only when
			// both CAs were made in the same second.
			cert := tc.cert
			c.hc.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return &cert, nil
			}
			resp, data := c.do("GET", "/api/v1/namespaces", "", nil)
			if resp.StatusCode != 200 {
				t.Errorf("%s certificate and the admin token: %d %s, want 200", tc.name, resp.StatusCode, data)
			}
			c.anon = true
			resp, data = c.do("GET", "/api/v1/namespaces", "", nil, "Authorization", "Bearer wrong")
			st := status(t, data)
			if resp.StatusCode != 401 || st.Reason != metav1.StatusReasonUnauthorized ||
				!strings.HasPrefix(st.Message, "Unauthorized: client certificate: ") ||
				!strings.Contains(st.Message, tc.reason) || !strings.HasSuffix(st.Message, "; unknown bearer token") {
				t.Errorf("%s certificate and an unknown token: %d %s, want 401 saying why each failed", tc.name, resp.StatusCode, data)
			}
			resp, data = c.do("GET", "/api/v1/namespaces", "", nil)
			if st := status(t, data); resp.StatusCode != 401 || !strings.HasPrefix(st.Message, "Unauthorized: client certificate: ") ||
				!strings.Contains(st.Message, tc.reason) || strings.Contains(st.Message, ";") {
				t.Errorf("%s certificate alone: %d %s, want 401 saying why it failed", tc.name, resp.StatusCode, data)
			}
		})
	}
}

// TestBearerHeaderParsing: the Authorization header is read as Kubernetes'
// bearertoken authenticator reads it: split at single spaces into at most
// three parts, the scheme "bearer" in any case, the second part the token.
// A token followed by more words authenticates; two spaces before the token
// leave none (an unauthenticated request, with upstream's warning).
func TestBearerHeaderParsing(t *testing.T) {
	srv := apiservertest.Start(t)
	anon := newClient(t, srv)
	anon.anon = true
	tok := apiservertest.AdminToken
	const extraSpace = "the provided Authorization header contains extra space before the bearer token, and is ignored"
	for _, tc := range []struct {
		name, path, header string
		code               int
		msg, warning       string
	}{
		{"token then more words", "/api/v1/namespaces", "Bearer " + tok + " extra", 200, "", ""},
		{"scheme in upper case", "/api/v1/namespaces", "BEARER " + tok, 200, "", ""},
		{"trailing space", "/api/v1/namespaces", "Bearer " + tok + " ", 200, "", ""},
		{"two spaces before the token", "/api/v1/namespaces", "Bearer  " + tok, 401, "Unauthorized", extraSpace},
		{"two spaces on a public path", "/version", "Bearer  " + tok, 200, "", extraSpace},
		{"scheme alone", "/api/v1/namespaces", "Bearer ", 401, "Unauthorized", ""},
		{"another scheme", "/api/v1/namespaces", "Basic " + tok, 401, "Unauthorized", ""},
		{"unknown token", "/api/v1/namespaces", "Bearer wrong", 401, "Unauthorized: unknown bearer token", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := anon.do("GET", tc.path, "", nil, "Authorization", tc.header)
			if resp.StatusCode != tc.code {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.code, data)
			}
			if tc.msg != "" {
				if st := status(t, data); st.Reason != metav1.StatusReasonUnauthorized || st.Message != tc.msg {
					t.Errorf("Status %q %q, want Unauthorized %q", st.Reason, st.Message, tc.msg)
				}
			}
			want := ""
			if tc.warning != "" {
				want = fmt.Sprintf("299 - %q", tc.warning)
			}
			if got := strings.Join(resp.Header.Values("Warning"), "; "); got != want {
				t.Errorf("warnings %q, want %q", got, want)
			}
		})
	}
}

// TestTableAndMetrics: kubectl's Table Accept gets rows with
// PartialObjectMetadata (or nothing, per includeObject); /metrics counts.
func TestTableAndMetrics(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	resp, data := c.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t1","labels":{"x":"y"}},"data":{"a":"b"}}`))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	accept := "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	for _, tc := range []struct {
		include, wantKind string
	}{{"", "PartialObjectMetadata"}, {"Metadata", "PartialObjectMetadata"}, {"Object", "ConfigMap"}, {"None", ""}} {
		path := "/api/v1/namespaces/default/configmaps"
		if tc.include != "" {
			path += "?includeObject=" + tc.include
		}
		resp, data := c.do("GET", path, "", nil, "Accept", accept)
		var tbl metav1.Table
		if err := json.Unmarshal(data, &tbl); err != nil || resp.StatusCode != 200 || tbl.Kind != "Table" {
			t.Fatalf("includeObject=%s: %d %s", tc.include, resp.StatusCode, data)
		}
		if len(tbl.ColumnDefinitions) == 0 || tbl.ColumnDefinitions[0].Name != "Name" || len(tbl.Rows) != 1 {
			t.Fatalf("includeObject=%s: table %s", tc.include, data)
		}
		var obj struct {
			Kind     string
			Metadata struct{ Labels map[string]string }
		}
		if raw := tbl.Rows[0].Object.Raw; len(raw) > 0 {
			_ = json.Unmarshal(raw, &obj)
		}
		if obj.Kind != tc.wantKind {
			t.Errorf("includeObject=%s: row object kind %q, want %q", tc.include, obj.Kind, tc.wantKind)
		}
		if tc.wantKind != "" && obj.Metadata.Labels["x"] != "y" {
			t.Errorf("includeObject=%s: row object lacks labels", tc.include)
		}
	}
	_, data = c.do("GET", "/metrics", "", nil)
	// The store's own metrics are served beside the requests'.
	for _, want := range []string{`apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"`,
		`skiff_storage_commit_duration_seconds_bucket{dialect="sqlite"`, `skiff_storage_commits_total{dialect="sqlite",result="committed"}`, `skiff_storage_watches{dialect="sqlite"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// watchLines reads watch events from a streaming response until n lines.
func watchLines(t *testing.T, body io.Reader, n int) []map[string]any {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []map[string]any
	for len(out) < n && sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch line %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	if len(out) < n {
		t.Fatalf("watch ended after %d events, want %d (%v)", len(out), n, sc.Err())
	}
	return out
}

// TestStreamingListAndExpiry: sendInitialEvents gives ADDED for every
// object then a BOOKMARK marked initial-events-end; a watch from a
// compacted revision gets an ERROR event with 410 Expired.
func TestStreamingListAndExpiry(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	var firstRV string
	for i := 0; i < 3; i++ {
		_, data := c.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s%d"}}`, i)))
		if i == 0 {
			var m metav1.PartialObjectMetadata
			_ = json.Unmarshal(data, &m)
			firstRV = m.ResourceVersion
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", nil)
	req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	evs := watchLines(t, resp.Body, 4)
	resp.Body.Close()
	for i := 0; i < 3; i++ {
		if evs[i]["type"] != "ADDED" {
			t.Errorf("event %d type %v, want ADDED", i, evs[i]["type"])
		}
	}
	bm := evs[3]["object"].(map[string]any)["metadata"].(map[string]any)
	if evs[3]["type"] != "BOOKMARK" || bm["annotations"].(map[string]any)["k8s.io/initial-events-end"] != "true" || bm["resourceVersion"] == "" {
		t.Errorf("4th event %v, want the initial-events-end BOOKMARK", evs[3])
	}

	// Without the required options the streaming list is refused, so
	// clients fall back to list+watch.
	if resp, data := c.do("GET", "/api/v1/configmaps?watch=true&sendInitialEvents=true", "", nil); resp.StatusCode != 422 {
		t.Errorf("sendInitialEvents without resourceVersionMatch: %d %s, want 422", resp.StatusCode, data)
	}

	for i := 0; i < 5; i++ {
		c.do("PATCH", "/api/v1/namespaces/default/configmaps/s0", "application/merge-patch+json", []byte(fmt.Sprintf(`{"data":{"n":"%d"}}`, i)))
	}
	rev, err := srv.Store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+firstRV, nil)
	req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
	resp, err = c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// As Kubernetes' watch cache: a 200 whose one event is the 410.
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch from compacted revision: %d, want 200 and an ERROR event", resp.StatusCode)
	}
	ev := watchLines(t, resp.Body, 1)[0]
	obj := ev["object"].(map[string]any)
	if want := fmt.Sprintf("too old resource version: %s (%d)", firstRV, rev); ev["type"] != "ERROR" || obj["code"] != float64(410) || obj["reason"] != "Expired" || obj["message"] != want {
		t.Errorf("watch from compacted revision: %v, want ERROR 410 Expired %q", ev, want)
	}
	_ = tls.VersionTLS12
}
