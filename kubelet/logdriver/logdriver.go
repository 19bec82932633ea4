package logdriver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Command is the argument the driver expects before the log path.
const Command = "log-driver"

// maxLine is the longest line written as one record; longer lines are
// split into partial (P) records, as containerd's CRI plugin does.
const maxLine = 16 * 1024

// URI is what to hand containerd (cio.LogURI) so that its shim runs
// `<binary> log-driver <logPath>` for a container.
func URI(binary, logPath string) (*url.URL, error) {
	if !filepath.IsAbs(binary) || !filepath.IsAbs(logPath) {
		return nil, fmt.Errorf("logdriver: binary %q and log path %q must be absolute", binary, logPath)
	}
	u := &url.URL{Scheme: "binary", Path: binary}
	q := u.Query()
	q.Set(Command, logPath)
	u.RawQuery = q.Encode()
	return u, nil
}

// Main is the driver process: args are [log-driver, path]; fds 3 and 4 carry
// the container's stdout and stderr, fd 5 is closed once the log file is
// open. It returns when both streams have ended.
func Main(args []string) error {
	if len(args) != 2 || args[0] != Command {
		return fmt.Errorf("usage: %s PATH (started by the containerd shim)", Command)
	}
	stdout, stderr, ready := os.NewFile(3, "stdout"), os.NewFile(4, "stderr"), os.NewFile(5, "ready")
	if stdout == nil || stderr == nil || ready == nil {
		return errors.New("logdriver: fds 3, 4 and 5 must be open (run by the containerd shim)")
	}
	f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		ready.Close()
		return fmt.Errorf("logdriver: %w", err)
	}
	defer f.Close()
	// The shim closes the container's pipes and then sends SIGTERM "so the
	// logger has a chance to flush" (it kills it 12s later). Dying at once
	// would lose what is still in the pipes: a crashed container's last
	// lines, the ones `kubectl logs --previous` is read for. So SIGTERM is
	// taken as "finish": the copy goes on until both pipes end.
	signal.Ignore(syscall.SIGTERM)
	if err := ready.Close(); err != nil {
		return fmt.Errorf("logdriver: signal ready: %w", err)
	}
	return Copy(f, stdout, stderr, time.Now)
}

// Copy writes every line read from stdout and stderr to w as CRI records
// until both readers end. Records are written whole, one at a time.
func Copy(w io.Writer, stdout, stderr io.Reader, now func() time.Time) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = copyStream(w, &mu, s.name, s.r, now)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func copyStream(w io.Writer, mu *sync.Mutex, stream string, r io.Reader, now func() time.Time) error {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			tag := "F"
			if isPrefix {
				tag = "P"
			}
			rec := make([]byte, 0, len(line)+64)
			rec = now().UTC().AppendFormat(rec, time.RFC3339Nano)
			rec = append(rec, ' ')
			rec = append(rec, stream...)
			rec = append(rec, ' ')
			rec = append(rec, tag...)
			rec = append(rec, ' ')
			rec = append(rec, line...)
			rec = append(rec, '\n')
			mu.Lock()
			_, werr := w.Write(rec)
			mu.Unlock()
			if werr != nil {
				return fmt.Errorf("logdriver: write: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("logdriver: read %s: %w", stream, err)
		}
	}
}
