package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skiffkube/skiff/kubelet/logs"
)

// dirFinder serves logs from files named <ns>_<pod>_<container>[.previous].log.
type dirFinder string

func (d dirFinder) ContainerLog(_ context.Context, ns, pod, container string, previous bool) (logs.File, error) {
	name := ns + "_" + pod + "_" + container
	if previous {
		name += ".previous"
	}
	p := filepath.Join(string(d), name+".log")
	if _, err := os.Stat(p); err != nil {
		return logs.File{}, fmt.Errorf("%w: %s", logs.ErrNotFound, name)
	}
	return logs.File{Path: p, Running: func() bool { return false }}, nil
}

// AttachToPod: the test containers keep no stdio, so attach follows logs.
func (d dirFinder) AttachToPod(context.Context, string, string, string, io.Reader, io.Writer, io.Writer, bool, <-chan TerminalSize) error {
	return ErrNoStdio
}

// ExecInPod answers exec requests for tests: "echo" writes its arguments,
// "cat" copies stdin, "exit N" returns N, other commands fail.
func (d dirFinder) ExecInPod(_ context.Context, ns, pod, container string, cmd []string,
	stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan TerminalSize) (int, error) {
	if ns != "default" || pod != "web" || container != "app" {
		return 0, ErrContainerNotFound
	}
	switch cmd[0] {
	case "echo":
		fmt.Fprintln(stdout, strings.Join(cmd[1:], " "))
		fmt.Fprintln(stderr, "to stderr")
		return 0, nil
	case "cat":
		_, err := io.Copy(stdout, stdin)
		return 0, err
	case "exit":
		n, err := strconv.Atoi(cmd[1])
		return n, err
	case "size":
		// The first terminal size the client sends.
		if !tty || resize == nil {
			return 1, nil
		}
		sz := <-resize
		fmt.Fprintf(stdout, "%dx%d\n", sz.Width, sz.Height)
		return 0, nil
	}
	return 0, errors.New("no such command")
}

// PortForward echoes what it reads, upper-cased for port 7007; other ports
// are closed.
func (d dirFinder) PortForward(_ context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if ns != "default" || pod != "web" || port != 7007 {
		return ErrContainerNotFound
	}
	buf := make([]byte, 512)
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			if _, werr := stream.Write([]byte(strings.ToUpper(string(buf[:n])))); werr != nil {
				return werr
			}
		}
		if err != nil {
			return nil
		}
	}
}

func TestContainerLogs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "default_web_app.log"), []byte(
		"2026-11-30T05:00:01Z stdout F one\n2026-11-30T05:00:02Z stderr F two\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "default_web_app.previous.log"), []byte(
		"2026-11-30T04:00:00Z stdout F old run\n"), 0o644)
	srv := httptest.NewServer(NewHandler(dirFinder(dir)))
	defer srv.Close()
	cases := []struct {
		name     string
		path     string
		wantCode int
		wantBody string
	}{
		{"all", "/containerLogs/default/web/app", 200, "one\ntwo\n"},
		{"tail", "/containerLogs/default/web/app?tailLines=1", 200, "two\n"},
		{"timestamps", "/containerLogs/default/web/app?tailLines=1&timestamps=true", 200, "2026-11-30T05:00:02Z two\n"},
		{"previous", "/containerLogs/default/web/app?previous=true", 200, "old run\n"},
		{"since time", "/containerLogs/default/web/app?sinceTime=2026-11-30T05:00:02Z", 200, "two\n"},
		{"limit", "/containerLogs/default/web/app?limitBytes=2", 200, "on"},
		{"follow of a stopped container ends", "/containerLogs/default/web/app?follow=true", 200, "one\ntwo\n"},
		{"unknown container", "/containerLogs/default/web/nope", 404, ""},
		{"bad tail", "/containerLogs/default/web/app?tailLines=-3", 400, ""},
		{"bad bool", "/containerLogs/default/web/app?follow=maybe", 400, ""},
		{"both sinces", "/containerLogs/default/web/app?sinceSeconds=5&sinceTime=2026-11-30T05:00:02Z", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.wantCode)
			}
			if tc.wantCode == 200 && string(body) != tc.wantBody {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}
		})
	}
	resp, err := http.Post(srv.URL+"/containerLogs/default/web/app", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}
