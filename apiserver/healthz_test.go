package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/apiserver/healthz"
	"github.com/skiffkube/skiff/storage"
)

// unreachableStore answers reads of the revision with an error while down,
// as a store whose database went away does.
type unreachableStore struct {
	*storage.Store
	down atomic.Bool
}

func (s *unreachableStore) Revision(ctx context.Context) (int64, error) {
	if s.down.Load() {
		return 0, errors.New("storage: read revision: dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return s.Store.Revision(ctx)
}

// anonymousHealth is a client without credentials, and check, which GETs a
// path with it and compares the answer.
func anonymousHealth(t *testing.T, srv *apiservertest.Running) (anon *client, check func(path string, wantCode int, wantBody string)) {
	anon = newClient(t, srv)
	anon.anon = true
	return anon, func(path string, wantCode int, wantBody string) {
		t.Helper()
		resp, data := anon.do("GET", path, "", nil)
		if resp.StatusCode != wantCode || string(data) != wantBody {
			t.Errorf("GET %s: %d %q, want %d %q", path, resp.StatusCode, data, wantCode, wantBody)
		}
	}
}

// The server is ready (and healthy) only while its database answers; it
// stays live, since restarting it would not bring the database back. Health
// is open to anonymous callers and says which check failed, not why.
func TestReadinessFollowsTheDatabase(t *testing.T) {
	us := &unreachableStore{}
	srv := apiservertest.StartWrapped(t, func(st *storage.Store) endpoints.Store { us.Store = st; return us }, nil)
	anon, check := anonymousHealth(t, srv)
	check("/readyz", 200, "ok")
	check("/readyz?verbose", 200, "[+]ping ok\n[+]storage ok\nreadyz check passed\n")
	check("/livez?verbose", 200, "[+]ping ok\nlivez check passed\n")

	// HEAD too (load balancers' probes use it), as kube-apiserver's
	// health handlers answer every method.
	for _, path := range []string{"/readyz", "/livez", "/healthz"} {
		if resp, _ := anon.do("HEAD", path, "", nil); resp.StatusCode != 200 {
			t.Errorf("anonymous HEAD %s: %d, want 200", path, resp.StatusCode)
		}
	}

	us.down.Store(true)
	if resp, _ := anon.do("HEAD", "/readyz", "", nil); resp.StatusCode != 500 {
		t.Errorf("anonymous HEAD /readyz with the database down: %d, want 500", resp.StatusCode)
	}
	check("/readyz", 500, "[+]ping ok\n[-]storage failed: reason withheld\nreadyz check failed\n")
	check("/healthz", 500, "[+]ping ok\n[-]storage failed: reason withheld\nhealthz check failed\n")
	check("/livez", 200, "ok")

	// A check's own path says why, and so is authorized (system:monitoring
	// may get it), as on kube-apiserver.
	for _, method := range []string{"GET", "HEAD"} {
		if resp, _ := anon.do(method, "/readyz/storage", "", nil); resp.StatusCode != 401 {
			t.Errorf("anonymous %s /readyz/storage: %d, want 401", method, resp.StatusCode)
		}
	}
	admin := newClient(t, srv)
	if resp, data := admin.do("GET", "/readyz/storage", "", nil); resp.StatusCode != 500 || !strings.Contains(string(data), "connection refused") {
		t.Errorf("GET /readyz/storage: %d %q, want 500 with the reason", resp.StatusCode, data)
	}
	check("/healthz?exclude=storage", 200, "ok")

	us.down.Store(false)
	check("/readyz", 200, "ok")
	if resp, data := admin.do("GET", "/readyz/storage", "", nil); resp.StatusCode != 200 || string(data) != "ok" {
		t.Errorf("GET /readyz/storage: %d %q, want 200 ok", resp.StatusCode, data)
	}
}

// leaderCheck fails while wedged, as client-go's leader election watchdog
// does for a leader that stopped renewing its Lease.
type leaderCheck struct{ wedged atomic.Bool }

func (c *leaderCheck) Name() string { return "leaderElection" }
func (c *leaderCheck) Check(*http.Request) error {
	if c.wedged.Load() {
		return errors.New("failed election to renew leadership on lease kube-scheduler")
	}
	return nil
}

// A wedged in-process leader fails liveness (and healthz), so a probe
// restarts the process; readiness is unaffected, the API is still served.
func TestLivenessFollowsTheInProcessLeaders(t *testing.T) {
	leader := &leaderCheck{}
	srv := apiservertest.StartWrapped(t, nil, func(c *apiserver.Config) {
		c.LivenessChecks = []healthz.Check{healthz.Named("scheduler-leader-election", leader)}
	})
	_, check := anonymousHealth(t, srv)
	check("/livez?verbose", 200, "[+]ping ok\n[+]scheduler-leader-election ok\nlivez check passed\n")
	check("/healthz?verbose", 200, "[+]ping ok\n[+]storage ok\n[+]scheduler-leader-election ok\nhealthz check passed\n")

	leader.wedged.Store(true)
	check("/livez", 500, "[+]ping ok\n[-]scheduler-leader-election failed: reason withheld\nlivez check failed\n")
	check("/healthz", 500, "[+]ping ok\n[+]storage ok\n[-]scheduler-leader-election failed: reason withheld\nhealthz check failed\n")
	check("/readyz", 200, "ok")

	leader.wedged.Store(false)
	check("/livez", 200, "ok")
}
