package apiserver_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// Profiles show what the server holds in memory, so they are served to
// cluster admins only, and not at all with --profiling=false.
func TestProfilesAreForAdminsAndCanBeTurnedOff(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := newClient(t, srv)
	if resp, data := admin.do("GET", "/debug/pprof/cmdline", "", nil); resp.StatusCode != 200 || !strings.Contains(string(data), "apiserver.test") {
		t.Errorf("admin GET /debug/pprof/cmdline: %d %q", resp.StatusCode, data)
	}
	// system:monitoring may read health and metrics, not profiles.
	monitor := kubernetes.NewForConfigOrDie(srv.UserConfig(t, "prometheus", "system:monitoring"))
	if _, err := monitor.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background()); err != nil {
		t.Fatalf("system:monitoring GET /metrics: %v", err)
	}
	if data, err := monitor.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/cmdline").DoRaw(context.Background()); !apierrors.IsForbidden(err) {
		t.Errorf("system:monitoring GET /debug/pprof/cmdline: %v %q, want forbidden", err, data)
	}

	off := apiservertest.StartWrapped(t, nil, func(c *apiserver.Config) { c.DisableProfiling = true })
	if resp, data := newClient(t, off).do("GET", "/debug/pprof/cmdline", "", nil); resp.StatusCode != 404 {
		t.Errorf("GET /debug/pprof/cmdline with profiling off: %d %q, want 404", resp.StatusCode, data)
	}
}
