package logs

import "errors"

// ErrNotFound means there is no log for the asked-for container.
var ErrNotFound = errors.New("logs: no such container log")

// File is where a container's log is and whether it is still written.
type File struct {
	Path string
	// Running reports whether the container still runs (Options.Running
	// for follow).
	Running func() bool
}
