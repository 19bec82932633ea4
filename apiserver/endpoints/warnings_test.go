package endpoints

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSetWarningsOnce: a warning computed twice (an update retried after a
// conflict computes the kind's warnings again) is sent once, as
// Kubernetes' warning recorder sends it; empty ones are not sent.
func TestSetWarningsOnce(t *testing.T) {
	w := httptest.NewRecorder()
	setWarnings(w, []string{"a", `b "quoted"`, "a", "", `b "quoted"`})
	got := w.Header().Values("Warning")
	want := []string{`299 - "a"`, `299 - "b \"quoted\""`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Warning headers %q, want %q", got, want)
	}
}
