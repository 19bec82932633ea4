package kineproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// SQLiteParams are the connection parameters kine needs on SQLite so that
// concurrent clients wait for the write lock instead of failing at once with
// SQLITE_BUSY. They are kine's own defaults for its default database, which
// an explicit endpoint would otherwise lose.
const SQLiteParams = "_journal_mode=WAL&_busy_timeout=30000&_synchronous=NORMAL&_txlock=immediate"

// SQLiteEndpoint is kine's --endpoint for a SQLite file at path.
func SQLiteEndpoint(path string) string {
	return "sqlite://" + path + "?" + SQLiteParams
}

// Process is one running kine server.
type Process struct {
	// Endpoint is the etcd client URL, http://127.0.0.1:<port>.
	Endpoint string

	cmd     *exec.Cmd
	logPath string
	done    chan struct{}

	mu      sync.Mutex
	waitErr error
	stopped bool
}

// Start runs bin with the given storage endpoint, listening for etcd clients
// and metrics on free loopback ports only, and returns once the etcd port
// accepts connections. logPath receives kine's output.
func Start(ctx context.Context, bin, endpoint, logPath string) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("kineproc: create log: %w", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin,
		"--endpoint", endpoint,
		"--listen-address", addr,
		"--metrics-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
	)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("kineproc: start %s: %w", bin, err)
	}
	p := &Process{Endpoint: "http://" + addr, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("kineproc: kine exited during start-up (%v); log tail:\n%s", p.exitErr(), p.LogTail(2000))
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("kineproc: kine did not listen on %s within 60s; log tail:\n%s", addr, p.LogTail(2000))
		}
	}
}

func (p *Process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Exited reports whether kine has exited, and why, while the benchmark still
// expected it to run.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopped {
			return true, nil
		}
		return true, p.waitErr
	default:
		return false, nil
	}
}

// LogTail returns up to n bytes from the end of kine's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// Stop asks kine to exit (SIGTERM), and kills it if it has not after 10 s.
// Safe to call twice.
func (p *Process) Stop() error {
	p.mu.Lock()
	already := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if already {
		<-p.done
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// freePort asks the kernel for an unused loopback port. Another process could
// take it before kine binds it; Start then fails with kine's error in the log.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("kineproc: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
