package logs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Options mirror corev1.PodLogOptions.
type Options struct {
	Timestamps bool
	// TailLines, when >= 0, keeps only the last TailLines lines; -1 is all.
	TailLines  int64
	SinceTime  time.Time
	LimitBytes int64
	Follow     bool
	// Running reports whether the container still writes; Follow stops once
	// it returns false and the file has been read to its end.
	Running func() bool
	// PollInterval is how often a followed file is checked (default 200ms).
	PollInterval time.Duration
	// Stream, when "stdout" or "stderr", keeps only that stream's records
	// (lines in no known format count as stdout); "" keeps both.
	Stream string
}

// record is one parsed line.
type record struct {
	ts      time.Time
	stream  string
	partial bool
	msg     []byte
	raw     bool
}

// parse splits "<RFC3339Nano> <stream> <P|F> <msg>"; anything else is raw.
func parse(line []byte) record {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) == 4 {
		ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
		s := string(fields[1])
		tag := string(fields[2])
		if err == nil && (s == "stdout" || s == "stderr") && (tag == "F" || tag == "P") {
			return record{ts: ts, stream: s, partial: tag == "P", msg: fields[3]}
		}
	}
	return record{msg: line, raw: true}
}

// Read writes the file's log lines to out as opts ask.
func Read(ctx context.Context, path string, opts Options, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	defer f.Close()
	start := int64(0)
	if opts.TailLines >= 0 {
		if start, err = tailOffset(f, opts.TailLines); err != nil {
			return err
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	w := &limitWriter{w: out, left: opts.LimitBytes}
	poll := opts.PollInterval
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	br := bufio.NewReader(f)
	var pending []byte // a line read without its newline yet (followed file)
	lastPass := false
	for {
		chunk, err := br.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == nil {
			line := bytes.TrimSuffix(pending, []byte{'\n'})
			pending = nil
			if werr := emit(w, parse(line), opts); werr != nil {
				if errors.Is(werr, errLimit) {
					return nil
				}
				return werr
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("logs: %w", err)
		}
		if !opts.Follow || opts.Running == nil || !opts.Running() {
			// One last pass: the container may have written more between
			// this end of file and its stop.
			if opts.Follow && !lastPass {
				lastPass = true
				continue
			}
			if len(pending) > 0 {
				if werr := emit(w, parse(pending), opts); werr != nil && !errors.Is(werr, errLimit) {
					return werr
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

var errLimit = errors.New("limit reached")

func emit(w *limitWriter, r record, opts Options) error {
	if opts.Stream != "" && ((r.raw && opts.Stream != "stdout") || (!r.raw && r.stream != opts.Stream)) {
		return nil
	}
	if !opts.SinceTime.IsZero() && !r.raw && r.ts.Before(opts.SinceTime) {
		return nil
	}
	var buf []byte
	if opts.Timestamps && !r.raw {
		buf = r.ts.UTC().AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, ' ')
	}
	buf = append(buf, r.msg...)
	if !r.partial {
		buf = append(buf, '\n')
	}
	return w.write(buf)
}

// limitWriter stops after left bytes when left > 0.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) write(p []byte) error {
	if l.left > 0 {
		if int64(len(p)) >= l.left {
			_, err := l.w.Write(p[:l.left])
			l.left = 0
			if err != nil {
				return err
			}
			return errLimit
		}
		l.left -= int64(len(p))
	}
	_, err := l.w.Write(p)
	return err
}

// tailOffset finds where the last n complete lines start, reading the file
// backwards in blocks so a large log is not read whole.
func tailOffset(f *os.File, n int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("logs: %w", err)
	}
	size := st.Size()
	if n == 0 {
		return size, nil
	}
	const block = 32 * 1024
	buf := make([]byte, block)
	pos := size
	var newlines int64
	// A trailing newline ends the last line; it does not start another.
	skipLast := true
	for pos > 0 {
		readSize := int64(block)
		if pos < readSize {
			readSize = pos
		}
		pos -= readSize
		if _, err := f.ReadAt(buf[:readSize], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("logs: %w", err)
		}
		for i := readSize - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				skipLast = false
				continue
			}
			if skipLast && pos+i == size-1 {
				skipLast = false
				continue
			}
			newlines++
			if newlines == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}
