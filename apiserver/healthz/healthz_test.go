package healthz_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/skiffkube/skiff/apiserver/healthz"
)

type check struct {
	name string
	err  error
}

func (c check) Name() string              { return c.name }
func (c check) Check(*http.Request) error { return c.err }

func TestReportsExclusionsAndPerCheckPaths(t *testing.T) {
	h := healthz.Handler(slog.New(slog.DiscardHandler),
		check{name: "storage"}, healthz.Named("scheduler-leader-election", check{name: "leaderElection", err: errors.New("lease expired")}))
	for _, tc := range []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/livez", 500, "[+]ping ok\n[+]storage ok\n[-]scheduler-leader-election failed: reason withheld\nlivez check failed\n"},
		// Leaving the failing check out passes; so does leaving out ping.
		{"/livez?exclude=scheduler-leader-election", 200, "ok"},
		{"/livez?exclude=scheduler-leader-election&exclude=ping&verbose", 200,
			"[+]ping excluded: ok\n[+]storage ok\n[+]scheduler-leader-election excluded: ok\nlivez check passed\n"},
		// A name that matches nothing is reported, and excludes nothing.
		{"/livez?exclude=storag&exclude=leaderElection&exclude=storag", 500, "[+]ping ok\n[+]storage ok\n[-]scheduler-leader-election failed: reason withheld\n" +
			`warn: some health checks cannot be excluded: no matches for "leaderElection","storag"` + "\nlivez check failed\n"},
		{"/livez?exclude=storag&exclude=scheduler-leader-election&verbose", 200, "[+]ping ok\n[+]storage ok\n[+]scheduler-leader-election excluded: ok\n" +
			`warn: some health checks cannot be excluded: no matches for "storag"` + "\nlivez check passed\n"},
		// Each check's own path answers with the reason.
		{"/livez/ping", 200, "ok"},
		{"/livez/storage", 200, "ok"},
		{"/livez/scheduler-leader-election", 500, "internal server error: lease expired\n"},
		{"/livez/leaderElection", 404, "404 page not found\n"},
		{"/livez/storage/more", 404, "404 page not found\n"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.wantCode || string(body) != tc.wantBody {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, rec.Code, body, tc.wantCode, tc.wantBody)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", tc.path, ct)
		}
	}
}
