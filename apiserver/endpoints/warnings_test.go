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

// TestSetWarningsQuoting: only quotes and backslashes are escaped, as
// NewWarningHeader escapes them (kubectl unquotes by dropping the
// backslash before any character, so a Go-quoted "\t" would reach the
// user as "t"); a text with a control character is not sent at all.
func TestSetWarningsQuoting(t *testing.T) {
	w := httptest.NewRecorder()
	setWarnings(w, []string{`café \ "x"`, "two\nlines", "tab\there"})
	got := w.Header().Values("Warning")
	want := []string{`299 - "café \\ \"x\""`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Warning headers %q, want %q", got, want)
	}
}

// TestSetWarningsTruncation: warnings go whole while they fit in the total;
// the one that does not fit turns truncation on, and all are sent again
// cut to the per-item length; once the total is reached the rest are
// dropped. Lengths count runes, not bytes.
func TestSetWarningsTruncation(t *testing.T) {
	total, item := warningTotalRunes, warningItemRunes
	warningTotalRunes, warningItemRunes = 25, 5
	defer func() { warningTotalRunes, warningItemRunes = total, item }()

	header := func(ws ...string) string {
		var out []string
		for _, s := range ws {
			out = append(out, `299 - "`+s+`"`)
		}
		return strings.Join(out, "\n")
	}
	check := func(in []string, want string) {
		t.Helper()
		w := httptest.NewRecorder()
		setWarnings(w, in)
		if got := strings.Join(w.Header().Values("Warning"), "\n"); got != want {
			t.Errorf("setWarnings(%q):\n%s\nwant\n%s", in, got, want)
		}
	}
	// 10+2+3+10 = 25 runes: fits, sent whole (ñ, ë, â, ô are one rune each).
	fits := []string{"aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô"}
	check(fits, header(fits...))
	// One more does not fit: everything so far is cut to 5 runes (5+2+3+5 = 15),
	// the new one too (20); the next ones go while fewer than 25 runes have
	// been sent (24, then 26), and the rest are dropped.
	check(append(fits, "eeeeeeeeee", "ffff", "gg", "hh"),
		header("aaaaa", "bb", "ccc", "Iñtër", "eeeee", "ffff", "gg"))
}
