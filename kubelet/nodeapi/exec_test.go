package nodeapi

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// execOnce runs cmd through the SPDY remotecommand protocol, as kubectl exec does.
func execOnce(t *testing.T, base, container string, stdin string, cmd ...string) (string, string, error) {
	t.Helper()
	q := url.Values{"command": cmd, "output": {"1"}, "error": {"1"}}
	if stdin != "" {
		q.Set("input", "1")
	}
	u, err := url.Parse(base + "/exec/default/web/" + container + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: base}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	err = ex.StreamWithContext(context.Background(), opts)
	return out.String(), errOut.String(), err
}

func TestExecOverSPDY(t *testing.T) {
	srv := httptest.NewServer(NewHandler(dirFinder(t.TempDir())))
	defer srv.Close()

	out, errOut, err := execOnce(t, srv.URL, "app", "", "echo", "hello", "node")
	if err != nil || out != "hello node\n" || errOut != "to stderr\n" {
		t.Errorf("echo: out %q err %q (%v)", out, errOut, err)
	}
	out, _, err = execOnce(t, srv.URL, "app", "piped in\n", "cat")
	if err != nil || out != "piped in\n" {
		t.Errorf("cat: %q (%v)", out, err)
	}
	_, _, err = execOnce(t, srv.URL, "app", "", "exit", "3")
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("exit 3: err %v, want an exit error with status 3", err)
	}
	if _, _, err := execOnce(t, srv.URL, "missing", "", "echo"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown container: %v", err)
	}
}

// oneSize sends one terminal size, then none.
type oneSize struct{ sent bool }

func (o *oneSize) Next() *remotecommand.TerminalSize {
	if o.sent {
		return nil
	}
	o.sent = true
	return &remotecommand.TerminalSize{Width: 132, Height: 43}
}

// A TTY exec hears the client's terminal size.
func TestExecTTYResize(t *testing.T) {
	srv := httptest.NewServer(NewHandler(dirFinder(t.TempDir())))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/exec/default/web/app?" + url.Values{"command": {"size"}, "output": {"1"}, "tty": {"1"}}.Encode())
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &oneSize{}})
	if err != nil || !strings.Contains(out.String(), "132x43") {
		t.Errorf("tty size: %q (%v)", out.String(), err)
	}
}
