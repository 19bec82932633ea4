//go:build !linux

package containerd

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Config selects the containerd to talk to (see the Linux build).
type Config struct {
	Socket, Namespace, Snapshotter, CgroupRoot string
	ConnectTimeout                             time.Duration
	Logger                                     *slog.Logger
}

// Runtime is only available on Linux.
type Runtime struct{}

// New fails: skiff runs containers with containerd on Linux only.
func New(context.Context, Config) (*Runtime, error) {
	return nil, errors.New("containerd: the node agent's container runtime needs Linux")
}
