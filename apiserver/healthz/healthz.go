// Package healthz answers Kubernetes' health endpoints (/healthz, /livez,
// /readyz) as kube-apiserver and its components do: "ok" when every named
// check passes, and otherwise, or with ?verbose, one line per check
// ("[+]ping ok", "[-]storage failed: reason withheld") and a verdict, with
// status 500 on failure. Why a check failed goes to the log, not to the
// caller, who may be anonymous. ?exclude=<name> (repeatable) leaves a check
// out, so a probe can ignore one known to fail. Each check also has a path
// of its own (/readyz/storage), which does say why it failed: like
// kube-apiserver, skiff authorizes those paths (system:monitoring may get
// them), where the endpoints themselves are open.
package healthz

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Check is one named check; client-go's leader election HealthzAdaptor is one.
type Check interface {
	Name() string
	Check(*http.Request) error
}

// ping always passes: a report that lists it says the process answered.

type ping struct{}

func (ping) Name() string              { return "ping" }
func (ping) Check(*http.Request) error { return nil }

// Handler answers an endpoint ("/livez") with ping and checks, and each
// check's own path below it ("/livez/ping"); mount it on both.
func Handler(log *slog.Logger, checks ...Check) http.Handler {
	checks = append([]Check{ping{}}, checks...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoint, name, one := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if !one {
			report(w, r, log, endpoint, checks)
			return
		}
		i := slices.IndexFunc(checks, func(c Check) bool { return c.Name() == name })
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		if err := run(log, checks[i], r); err != nil {
			http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		plain(w)
		_, _ = w.Write([]byte("ok"))
	})
}

// report runs every check not excluded by the request and writes the
// verdict: "ok", or the per-check lines when verbose or when one failed.
func report(w http.ResponseWriter, r *http.Request, log *slog.Logger, endpoint string, checks []Check) {
	excluded := sets.New(r.URL.Query()["exclude"]...)
	var lines strings.Builder
	failed := false
	for _, c := range checks {
		if excluded.Has(c.Name()) {
			excluded.Delete(c.Name())
			fmt.Fprintf(&lines, "[+]%s excluded: ok\n", c.Name())
			continue
		}
		if err := run(log, c, r); err != nil {
			fmt.Fprintf(&lines, "[-]%s failed: reason withheld\n", c.Name())
			failed = true
			continue
		}
		fmt.Fprintf(&lines, "[+]%s ok\n", c.Name())
	}
	if excluded.Len() > 0 {
		// A misspelt exclusion must not pass for a check left out.
		quoted := make([]string, 0, excluded.Len())
		for _, name := range sets.List(excluded) {
			quoted = append(quoted, strconv.Quote(name))
		}
		fmt.Fprintf(&lines, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	plain(w)
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(&lines, "%s check failed\n", endpoint)
	case r.URL.Query().Has("verbose"):
		fmt.Fprintf(&lines, "%s check passed\n", endpoint)
	default:
		lines.Reset()
		lines.WriteString("ok")
	}
	_, _ = w.Write([]byte(lines.String()))
}

// run runs c, logging why it failed.
func run(log *slog.Logger, c Check, r *http.Request) error {
	err := c.Check(r)
	if err != nil {
		log.Warn("health check failed", "check", c.Name(), "path", r.URL.Path, "err", err)
	}
	return err
}

func plain(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
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
