// Package healthz answers Kubernetes' health endpoints (/healthz, /livez,
// /readyz) as kube-apiserver and its components do: "ok" when every named
// check passes, and otherwise, or with ?verbose, one line per check
// ("[+]ping ok", "[-]storage failed: reason withheld") and a verdict, with
// status 500 on failure. Why a check failed goes to the log, not to the
// caller, who may be anonymous.
package healthz

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Check is one named check; client-go's leader election HealthzAdaptor is one.
type Check interface {
	Name() string
	Check(*http.Request) error
}

// Handler runs checks for each request; "ping", which always passes, comes
// first, so a verbose report always says the process answered.
func Handler(log *slog.Logger, checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var report strings.Builder
		report.WriteString("[+]ping ok\n")
		failed := false
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				log.Warn("health check failed", "check", c.Name(), "path", r.URL.Path, "err", err)
				fmt.Fprintf(&report, "[-]%s failed: reason withheld\n", c.Name())
				failed = true
				continue
			}
			fmt.Fprintf(&report, "[+]%s ok\n", c.Name())
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		endpoint := strings.TrimPrefix(r.URL.Path, "/")
		switch {
		case failed:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(&report, "%s check failed\n", endpoint)
		case r.URL.Query().Has("verbose"):
			fmt.Fprintf(&report, "%s check passed\n", endpoint)
		default:
			report.Reset()
			report.WriteString("ok")
		}
		_, _ = w.Write([]byte(report.String()))
	})
}

// Named gives check another name in reports: one process running several
// leader-elected loops has one client-go HealthzAdaptor per loop, each of
// which calls itself "leaderElection".
func Named(name string, check Check) Check { return named{name, check} }

type named struct {
	name  string
	check Check
}

func (n named) Name() string                { return n.name }
func (n named) Check(r *http.Request) error { return n.check.Check(r) }
