package delegated_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/delegated"
	"github.com/skiffkube/skiff/apiserver/healthz"
)

// The endpoint asks the real API server who a caller is and what it may do,
// with the scheduler's own identity (whose role allows both reviews).
func TestEndpointVetsCallersThroughTheAPIServer(t *testing.T) {
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(api.Config)
	component := kubernetes.NewForConfigOrDie(api.UserConfig(t, "system:kube-scheduler"))

	reg := prometheus.NewRegistry()
	scrapes := prometheus.NewCounter(prometheus.CounterOpts{Name: "demo_scrapes_total", Help: "test"})
	scrapes.Inc()
	reg.MustRegister(scrapes)
	addr, err := delegated.Start(ctx, delegated.Endpoint{Address: "127.0.0.1:0", Client: component, Metrics: reg, Profiling: true,
		ComponentConfig: map[string]any{"kind": "DemoConfiguration", "parallelism": 7}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}

	// A monitoring account: bound to system:monitoring, as Prometheus is.
	monitor := serviceAccountToken(t, admin, "prometheus")
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-monitoring"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:monitoring"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding: %v", err)
	}
	stranger := serviceAccountToken(t, admin, "stranger")

	code, body, header := getWithHeader(t, addr, "/configz", "Bearer "+apiservertest.AdminToken)
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("/configz Content-Type %q, want application/json", ct)
	}
	var configz map[string]map[string]any
	if err := json.Unmarshal([]byte(body), &configz); code != 200 || err != nil ||
		configz["componentconfig"]["kind"] != "DemoConfiguration" || configz["componentconfig"]["parallelism"] != 7.0 || len(configz) != 1 {
		t.Fatalf("/configz: %d %s (%v), want the configuration under componentconfig", code, body, err)
	}

	for _, tc := range []struct {
		name, path, auth string
		code             int
		want             string
	}{
		{"health needs no credentials", "/healthz", "", 200, "ok"},
		{"readiness needs no credentials", "/readyz", "", 200, "ok"},
		{"anonymous may not scrape", "/metrics", "", 403, `User \"system:anonymous\" cannot get path \"/metrics\"`},
		{"a forged token is refused", "/metrics", "Bearer not-a-token", 401, "Unauthorized"},
		// The Authorization header is read as Kubernetes' bearertoken
		// authenticator (in delegated authentication too) reads it; a
		// header that carries no bearer token leaves the caller anonymous.
		{"another scheme is no credential", "/metrics", "Basic YWRtaW46YWRtaW4=", 403, `User \"system:anonymous\" cannot get path \"/metrics\"`},
		{"the scheme in lower case", "/metrics", "bearer " + apiservertest.AdminToken, 200, "demo_scrapes_total 1"},
		{"the token then more words", "/metrics", "Bearer " + apiservertest.AdminToken + " extra", 200, "demo_scrapes_total 1"},
		{"two spaces before the token carry none", "/metrics", "Bearer  " + apiservertest.AdminToken, 403, `User \"system:anonymous\" cannot get path \"/metrics\"`},
		{"the scheme alone", "/metrics", "Bearer ", 403, `User \"system:anonymous\" cannot get path \"/metrics\"`},
		{"an account without the role may not scrape", "/metrics", "Bearer " + stranger, 403, `system:serviceaccount:default:stranger\" cannot get path \"/metrics\"`},
		{"system:monitoring may scrape", "/metrics", "Bearer " + monitor, 200, "demo_scrapes_total 1"},
		{"the admin may scrape", "/metrics", "Bearer " + apiservertest.AdminToken, 200, "demo_scrapes_total 1"},
		// A check's own path says why it failed, so it is vetted.
		{"anonymous may not read one check", "/livez/ping", "", 403, `User \"system:anonymous\" cannot get path \"/livez/ping\"`},
		{"system:monitoring may read one check", "/livez/ping", "Bearer " + monitor, 200, "ok"},
		// Profiles show what the process holds: cluster-admin's, not monitoring's.
		{"system:monitoring may not profile", "/debug/pprof/cmdline", "Bearer " + monitor, 403, `cannot get path \"/debug/pprof/cmdline\"`},
		{"the admin may profile", "/debug/pprof/cmdline", "Bearer " + apiservertest.AdminToken, 200, "delegated.test"},
		{"the admin may list profiles", "/debug/pprof/", "Bearer " + apiservertest.AdminToken, 200, "goroutine"},
		// The configuration is the admin's to read, not monitoring's (as system:monitoring in Kubernetes).
		{"anonymous may not read the configuration", "/configz", "", 403, `User \"system:anonymous\" cannot get path \"/configz\"`},
		{"a forged token may not read the configuration", "/configz", "Bearer not-a-token", 401, "Unauthorized"},
		{"system:monitoring may not read the configuration", "/configz", "Bearer " + monitor, 403, `cannot get path \"/configz\"`},
		{"the admin may read the configuration", "/configz", "Bearer " + apiservertest.AdminToken, 200, `"kind": "DemoConfiguration"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, addr, tc.path, tc.auth)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("GET %s: %d %s, want %d containing %q", tc.path, code, body, tc.code, tc.want)
			}
			if code >= 400 {
				var st metav1.Status
				if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" || int(st.Code) != code {
					t.Fatalf("refusal is not a Status with code %d: %s (%v)", code, body, err)
				}
			}
		})
	}
}

// The certificate made without --tls-cert-file is valid for the address
// the endpoint listens on, so a client that pins it can verify the name.
func TestSelfSignedCertificateNamesTheAddress(t *testing.T) {
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := delegated.Start(ctx, delegated.Endpoint{Address: "127.0.0.1:0",
		Client: kubernetes.NewForConfigOrDie(api.Config), Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	chain := conn.ConnectionState().PeerCertificates
	if len(chain) < 2 {
		t.Fatalf("want leaf and its CA, got %d certificates", len(chain))
	}
	roots := x509.NewCertPool()
	roots.AddCert(chain[len(chain)-1])
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("certificate not valid for %s: %v", name, err)
		}
	}
}

func TestStartRefusesBadSettings(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		e    delegated.Endpoint
		want string
	}{
		{"port in use", delegated.Endpoint{Address: busy.Addr().String()}, "address already in use"},
		{"certificate without key", delegated.Endpoint{Address: "127.0.0.1:0", CertFile: "/tmp/x.crt"}, "give both the certificate and its key"},
		{"unreadable certificate", delegated.Endpoint{Address: "127.0.0.1:0", CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key"}, "serving certificate /nonexistent.crt"},
		{"address without port", delegated.Endpoint{Address: "127.0.0.1"}, "missing port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.Metrics = prometheus.NewRegistry()
			if _, err := delegated.Start(ctx, tc.e); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// serviceAccountToken creates the account name in default and returns a
// token for it from the TokenRequest API.
func serviceAccountToken(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("service account %s: %v", name, err)
	}
	tr, err := c.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	return tr.Status.Token
}

func get(t *testing.T, addr, path, auth string) (int, string) {
	t.Helper()
	code, body, _ := getWithHeader(t, addr, path, auth)
	return code, body
}

func getWithHeader(t *testing.T, addr, path, auth string) (int, string, http.Header) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // a self-signed test certificate
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// failing is a health check whose result the test sets.
type failing struct{ err error }

func (f *failing) Name() string              { return "leaderElection" }
func (f *failing) Check(*http.Request) error { return f.err }

// A failed check (a leader that no longer renews its Lease) fails /healthz
// and /livez, so a liveness probe restarts the process; /readyz and the
// reason stay as they were.
func TestFailedCheckFailsHealthAndLiveness(t *testing.T) {
	api := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check := &failing{}
	addr, err := delegated.Start(ctx, delegated.Endpoint{Address: "127.0.0.1:0",
		Client: kubernetes.NewForConfigOrDie(api.Config), Metrics: prometheus.NewRegistry(), Checks: []healthz.Check{check}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := get(t, addr, p, ""); code != 200 || body != "ok" {
			t.Fatalf("healthy %s: %d %q", p, code, body)
		}
	}
	check.err = errors.New("failed election to renew leadership on lease kube-scheduler")
	for p, want := range map[string]string{
		"/healthz": "[+]ping ok\n[-]leaderElection failed: reason withheld\nhealthz check failed\n",
		"/livez":   "[+]ping ok\n[-]leaderElection failed: reason withheld\nlivez check failed\n",
	} {
		if code, body := get(t, addr, p, ""); code != 500 || body != want {
			t.Fatalf("unhealthy %s: %d %q, want 500 %q", p, code, body, want)
		}
	}
	if code, body := get(t, addr, "/readyz", ""); code != 200 || body != "ok" {
		t.Fatalf("readyz with a failed liveness check: %d %q", code, body)
	}
	if code, body := get(t, addr, "/livez/leaderElection", "Bearer "+apiservertest.AdminToken); code != 500 || !strings.Contains(body, "lease kube-scheduler") {
		t.Fatalf("/livez/leaderElection: %d %q, want 500 with the reason", code, body)
	}
	if code, body := get(t, addr, "/livez?exclude=leaderElection", ""); code != 200 || body != "ok" {
		t.Fatalf("/livez excluding the failed check: %d %q", code, body)
	}
	// Without Profiling (--profiling=false) there are no profiles to get.
	if code, _ := get(t, addr, "/debug/pprof/cmdline", "Bearer "+apiservertest.AdminToken); code != 404 {
		t.Fatalf("/debug/pprof/cmdline without profiling: %d, want 404", code)
	}
	// Without a ComponentConfig there is no /configz.
	if code, _ := get(t, addr, "/configz", "Bearer "+apiservertest.AdminToken); code != 404 {
		t.Fatalf("/configz without a configuration: %d, want 404", code)
	}
}
