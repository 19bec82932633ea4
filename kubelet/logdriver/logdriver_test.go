package logdriver

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestDriverDrainsAfterSIGTERM runs the driver as the shim does and, like
// the shim, closes the pipes and sends SIGTERM at once: every line still in
// the pipes must reach the log file.
func TestDriverDrainsAfterSIGTERM(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "driver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/skiffkube/skiff/kubelet/logdriver/testdriver").CombinedOutput(); err != nil {
		t.Fatalf("building the test driver: %v\n%s", err, out)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	readyR, readyW, _ := os.Pipe()
	logPath := filepath.Join(dir, "0.log")
	cmd := exec.Command(bin, Command, logPath)
	cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outR.Close()
	errR.Close()
	readyW.Close()
	if _, err := io.ReadAll(readyR); err != nil { // closed once the log file is open
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&want, "line %d of the container's last words\n", i)
	}
	if _, err := outW.WriteString(want.String()); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("driver after SIGTERM: %v", err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), " stdout F line "); n != 2000 {
		t.Fatalf("%d of 2000 lines reached the log", n)
	}
}
