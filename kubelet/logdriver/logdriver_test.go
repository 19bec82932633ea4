package logdriver

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestCopyWritesCRIRecords(t *testing.T) {
	at := time.Date(2026, 11, 30, 5, 30, 0, 123, time.UTC)
	var out bytes.Buffer
	long := strings.Repeat("x", maxLine+10)
	err := Copy(&out, strings.NewReader("one\n\nlast without newline"), strings.NewReader(long+"\n"), func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var stdout, stderr []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "2026-11-30T05:30:00.000000123Z stdout "):
			stdout = append(stdout, strings.TrimPrefix(l, "2026-11-30T05:30:00.000000123Z stdout "))
		case strings.HasPrefix(l, "2026-11-30T05:30:00.000000123Z stderr "):
			stderr = append(stderr, strings.TrimPrefix(l, "2026-11-30T05:30:00.000000123Z stderr "))
		default:
			t.Errorf("malformed record %q", l)
		}
	}
	if want := []string{"F one", "F ", "F last without newline"}; strings.Join(stdout, "|") != strings.Join(want, "|") {
		t.Errorf("stdout records %q, want %q", stdout, want)
	}
	if len(stderr) != 2 || stderr[0] != "P "+long[:maxLine] || stderr[1] != "F "+long[maxLine:] {
		t.Errorf("long stderr line not split into P then F: %d records", len(stderr))
	}
}

func TestURI(t *testing.T) {
	u, err := URI("/usr/local/bin/skiff", "/var/log/pods/ns_p_u/c/0.log")
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "binary" || u.Path != "/usr/local/bin/skiff" || u.Query().Get(Command) != "/var/log/pods/ns_p_u/c/0.log" {
		t.Errorf("URI = %s", u)
	}
	if _, err := URI("skiff", "/x.log"); err == nil {
		t.Error("relative binary accepted")
	}
}

func TestMainRejectsBadArguments(t *testing.T) {
	if err := Main([]string{"something-else"}); err == nil {
		t.Error("bad arguments accepted")
	}
}
