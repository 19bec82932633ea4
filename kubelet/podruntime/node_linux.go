//go:build linux

package podruntime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/network"
	"github.com/skiffkube/skiff/kubelet/runtime/containerd"
)

// NodeOptions are what `skiff agent` / `skiff server` know when they start
// the real runtime.
type NodeOptions struct {
	// DataDir is skiff's data directory; the agent keeps pod state in
	// <DataDir>/agent/{pods,network}, the FIFOs of containers with stdin in
	// <DataDir>/agent/io, and imports the image archives found in
	// <DataDir>/agent/images at start.
	DataDir string
	// PodCIDR is the node's pod range from its Node object.
	PodCIDR string
	// ContainerdSocket defaults to /run/containerd/containerd.sock.
	ContainerdSocket string
	// ContainerdNamespace defaults to "skiff"; CgroupRoot to /skiff.
	ContainerdNamespace string
	CgroupRoot          string
	// LogDriver is the executable the containerd shim runs to write CRI
	// logs (`<LogDriver> log-driver <path>`, see kubelet/logdriver); the
	// skiff binary's own path in production. Required.
	LogDriver string
	// Objects reads ConfigMaps and Secrets for env and volumes (the agent's
	// listers or clientset).
	Objects ObjectGetter
	// Bridge defaults to skiff0; LogDir to /var/log/pods; NetnsPrefix
	// (the pod network namespaces' name prefix) to network's default.
	Bridge      string
	NetnsPrefix string
	LogDir      string
	Logger      *slog.Logger
	// Recorder receives the runtime's container Events (see Config).
	Recorder record.EventRecorder
}

// Node is the real runtime with what it was built from, for Close.
type Node struct {
	*Runtime
	Containers *containerd.Runtime
	Network    *network.Manager
}

// Close drops the containerd connection; containers and networks stay.
func (n *Node) Close() error {
	n.Runtime.Stop()
	return n.Containers.Close()
}

// OpenNode connects to containerd, imports <DataDir>/agent/images, and
// makes sure the node bridge exists. An error names what is missing (for the
// node's Ready condition), e.g. a containerd socket that is not there.
func OpenNode(ctx context.Context, o NodeOptions) (*Node, error) {
	if o.DataDir == "" || !filepath.IsAbs(o.DataDir) {
		return nil, fmt.Errorf("podruntime: data directory %q must be an absolute path", o.DataDir)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	socket := o.ContainerdSocket
	if socket == "" {
		socket = containerd.DefaultSocket
	}
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("containerd socket %s not found: %w", socket, err)
	}
	agentDir := filepath.Join(o.DataDir, "agent")
	ctr, err := containerd.New(ctx, containerd.Config{
		Socket: socket, Namespace: o.ContainerdNamespace, CgroupRoot: o.CgroupRoot, LogDriver: o.LogDriver, Logger: o.Logger,
		IODir: filepath.Join(agentDir, "io"),
	})
	if err != nil {
		return nil, err
	}
	refs, err := ctr.ImportDir(ctx, filepath.Join(agentDir, "images"))
	if len(refs) > 0 {
		o.Logger.Info("imported images", "dir", filepath.Join(agentDir, "images"), "images", refs)
	}
	if err != nil {
		// One bad archive must not keep the node down; it is logged.
		o.Logger.Warn("importing images", "err", err)
	}
	nets, err := network.New(network.Config{
		PodCIDR: o.PodCIDR, StateDir: filepath.Join(agentDir, "network"), Bridge: o.Bridge, NetnsPrefix: o.NetnsPrefix, Logger: o.Logger,
	})
	if err != nil {
		ctr.Close()
		return nil, err
	}
	if err := nets.EnsureBridge(ctx); err != nil {
		ctr.Close()
		return nil, err
	}
	rt, err := New(Config{
		Containers: ctr, Network: nets, PodDir: filepath.Join(agentDir, "pods"), LogDir: o.LogDir, Logger: o.Logger,
		Objects: o.Objects, Recorder: o.Recorder,
	})
	if err != nil {
		ctr.Close()
		return nil, err
	}
	return &Node{Runtime: rt, Containers: ctr, Network: nets}, nil
}
