package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// openPTY opens a pseudo-terminal of the given size: the master for the
// test, the slave for kubectl's stdio.
func openPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("pty size: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// kubectl attach and run with stdin and a TTY on real containerd: `kubectl
// run -i --rm` sends a line to a container that answers it (stdinOnce: the
// container sees its input end with the session and exits), `kubectl attach
// -it` from a terminal gets a TTY of the terminal's size, `kubectl attach
// -i` (1.33 over WebSocket, 1.27 over SPDY) feeds a container's stdin
// session after session, also after a server restart, logs of these
// containers still work, and a container without stdin refuses input.
func TestAttachStdinAndTTY(t *testing.T) {
	s, k := startNodeServer(t)

	t.Run("kubectl run -i --rm", func(t *testing.T) {
		out := k.okIn("hello over attach\n", "run", "chat", "-i", "--rm", "--restart=Never", "--image="+testimage.Ref, "--", "chat")
		contains(t, "kubectl run -i", out, "got hello over attach size=none", "stdin closed", `pod "chat" deleted`)
	})

	k.okIn(podManifest("tty", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["chat"]
    stdin: true
    tty: true
`), "apply", "-f", "-")
	k.okIn(podManifest("quiet", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["chat"]
    stdin: true
`), "apply", "-f", "-")
	k.okIn(podManifest("nostdin", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["serve", ":8080"]
`), "apply", "-f", "-")
	for _, p := range []string{"tty", "quiet", "nostdin"} {
		waitFor(t, k, 60*time.Second, p+" running", func(out string) bool { return out == "Running" }, "get", "pod", p, "-o", "jsonpath={.status.phase}")
	}

	t.Run("kubectl attach -it from a terminal", func(t *testing.T) {
		master, slave := openPTY(t, 120, 40)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, k.bin, "--kubeconfig", k.kc, "--cache-dir", k.cacheDir, "attach", "-it", "tty")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		var screen syncBuffer
		go io.Copy(&screen, master)
		// Type a line until the answer comes: the first ones may go before
		// kubectl has attached, and kubectl sends the size as it attaches.
		deadline := time.Now().Add(45 * time.Second)
		for !strings.Contains(screen.String(), "got hi size=120x40") {
			if time.Now().After(deadline) {
				t.Fatalf("no answer with the terminal's size; the terminal shows:\n%s", screen.String())
			}
			if _, err := master.Write([]byte("hi\r")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
	})

	t.Run("kubectl attach -i twice without stdinOnce", func(t *testing.T) {
		// The client's input ends: the session detaches at once (as with
		// containerd's CRI plugin) and the container's stdin stays open for
		// the next one; the answers are in the log.
		k.okIn("one\n", "attach", "-i", "quiet")
		waitFor(t, k, 30*time.Second, "first answer", func(out string) bool { return strings.Contains(out, "got one size=none") }, "logs", "quiet")
		k.okIn("two\n", "attach", "-i", "quiet")
		waitFor(t, k, 30*time.Second, "second answer", func(out string) bool { return strings.Contains(out, "got two size=none") }, "logs", "quiet")
		// kubectl 1.27 speaks SPDY, passed straight through to the node.
		newKubectl(t, s, 27).okIn("three\n", "attach", "-i", "quiet")
		waitFor(t, k, 30*time.Second, "answer to kubectl 1.27", func(out string) bool { return strings.Contains(out, "got three size=none") }, "logs", "quiet")
	})

	t.Run("logs", func(t *testing.T) {
		contains(t, "kubectl logs tty", k.ok("logs", "tty"), "tty=true", "got hi size=120x40")
		contains(t, "kubectl logs quiet", k.ok("logs", "quiet"), "tty=false", "got one size=none", "got two size=none")
	})

	t.Run("a container without stdin", func(t *testing.T) {
		out := k.fails("x\n", "attach", "-i", "nostdin")
		contains(t, "kubectl attach -i nostdin", out, "has no stdin")
	})

	// A new server (and agent) on the same data directory opens the
	// container's FIFOs again: the same container takes input and logs its
	// answer. (Not a subtest: the new server must outlive it.)
	id := k.ok("get", "pod", "quiet", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	port := nodeAPIPort(t, k)
	s.stop()
	s, k = startNodeServerIn(t, s.dataDir, port)
	waitFor(t, k, 30*time.Second, "the pod reported again after a server restart", func(out string) bool { return out == id+" 0" },
		"get", "pod", "quiet", "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}")
	// The pod's status above is the stored one: the new agent may not have
	// opened its container runtime yet, which its node API says (a
	// transient error, as the kubelet's before its runtime is up).
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := k.run("after restart\n", "attach", "-i", "quiet")
		if err == nil {
			break
		}
		if !strings.Contains(out, "container runtime is not ready yet") || time.Now().After(deadline) {
			t.Fatalf("kubectl attach -i quiet after the restart: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	waitFor(t, k, 30*time.Second, "an answer after the restart", func(out string) bool { return strings.Contains(out, "got after restart size=none") }, "logs", "quiet")
}
