//go:build linux

package nodeagent

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/imagegc"
	"github.com/skiffkube/skiff/kubelet/podruntime"
)

// ImageGC is the node's image garbage collector once the runtime is open:
// the eviction manager frees disk through it under DiskPressure. Before
// the runtime opens its methods fail with errNotOpen.
type ImageGC struct {
	mu sync.Mutex
	m  *imagegc.Manager
}

// FreeSpace removes unused images until bytes are freed (see
// imagegc.Manager.FreeSpace).
func (g *ImageGC) FreeSpace(ctx context.Context, bytes int64) (int64, error) {
	m, err := g.manager()
	if err != nil {
		return 0, err
	}
	return m.FreeSpace(ctx, bytes)
}

// DeleteUnusedImages removes every unused image old enough.
func (g *ImageGC) DeleteUnusedImages(ctx context.Context) (int64, error) {
	m, err := g.manager()
	if err != nil {
		return 0, err
	}
	return m.DeleteUnusedImages(ctx)
}

// Reclaim frees disk for the eviction manager before it evicts pods for a
// disk signal, as the kubelet's image reclaim: every unused image old
// enough goes. The data directory and containerd's root share one file
// system on most nodes, so nodefs signals reclaim images too.
func (g *ImageGC) Reclaim(ctx context.Context, signal eviction.Signal) error {
	if _, err := g.DeleteUnusedImages(ctx); err != nil {
		return fmt.Errorf("reclaiming disk for %s: %w", signal, err)
	}
	return nil
}

var _ eviction.Reclaimer = (*ImageGC)(nil)

func (g *ImageGC) manager() (*imagegc.Manager, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		return nil, errNotOpen
	}
	return g.m, nil
}

// start makes the collector for the opened node and runs it every
// imagegc.Period until ctx ends. Images imported from
// <data-dir>/agent/images are collected like any other: the next start
// imports them again.
func (g *ImageGC) start(ctx context.Context, o Options, n *podruntime.Node, rec record.EventRecorder) error {
	path := o.ImageFSPath
	if path == "" {
		path = n.Containers.ImageFSPath(ctx)
	}
	m, err := imagegc.New(imagegc.Config{
		Runtime: n.Containers, Path: path, Policy: o.ImageGC, ImageIDLabel: podruntime.LabelImageID,
		Recorder: rec, Logger: o.Logger.With("component", "image-gc"),
		// The kubelet's node reference: events about the node go to the
		// default namespace.
		Node: &corev1.ObjectReference{Kind: "Node", Name: o.NodeName, UID: types.UID(o.NodeName)},
	})
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.m = m
	g.mu.Unlock()
	o.Logger.Info("image garbage collection", "imageFS", path, "highThreshold", o.ImageGC.HighThresholdPercent,
		"lowThreshold", o.ImageGC.LowThresholdPercent, "minimumAge", o.ImageGC.MinAge)
	go m.Run(ctx)
	return nil
}
