package endpoints

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// TestServeHTTPLabelsItsGoroutine checks that a request is served under
// profiler labels naming its API group, resource and verb, and that the
// goroutine has its own labels back afterwards: a pool's goroutine serves
// one request after another, and whatever it does next must not be counted
// as the last request's.
func TestServeHTTPLabelsItsGoroutine(t *testing.T) {
	h := &Handler{reg: registry.New(), fms: newFieldManagers()}
	const want = `# labels: {"group":"apps", "resource":"widgets/status", "verb":"update"}`
	// The resource is not registered: the handler answers 404 once it has
	// classified the request, and reports the labels it serves under.
	w := &labelRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/apis/apps/v1/namespaces/default/widgets/w/status", nil))
	if w.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", w.Code)
	}
	if !strings.Contains(w.during, want) {
		t.Errorf("while serving, no goroutine had the labels %s; goroutines:\n%s", want, w.during)
	}
	if after := goroutineProfile(t); strings.Contains(after, `"widgets/status"`) {
		t.Errorf("after the request, a goroutine still has its labels:\n%s", after)
	}
}

// labelRecorder records the goroutine profile when the response starts.
type labelRecorder struct {
	*httptest.ResponseRecorder
	during string
}

func (r *labelRecorder) WriteHeader(code int) {
	if r.during == "" {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		r.during = b.String()
	}
	r.ResponseRecorder.WriteHeader(code)
}

func goroutineProfile(t *testing.T) string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
