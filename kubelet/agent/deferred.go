package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RuntimeOpener opens a node's real runtime. It is called with the node's
// pod CIDR, which node IPAM assigns only after the node has registered (the
// pod network's bridge takes the CIDR's gateway address).
type RuntimeOpener func(ctx context.Context, podCIDR string) (Runtime, error)

// errNoPodCIDR is the not-ready reason until node IPAM has spoken.
var errNoPodCIDR = errors.New("waiting for the node's pod CIDR from node IPAM")

// DeferredRuntime is a Runtime that comes into being after registration:
// the agent calls its opener once the Node has a pod CIDR, and again every
// few seconds while opening fails. Until then the node reports Ready=False
// with the reason (e.g. "containerd socket … not found") and pods wait.
type DeferredRuntime struct {
	name string
	open RuntimeOpener

	mu       sync.Mutex
	rt       Runtime
	err      error
	onChange func(types.UID)
}

// NewDeferred returns a runtime named name (for node status) that open
// creates later.
func NewDeferred(name string, open RuntimeOpener) *DeferredRuntime {
	return &DeferredRuntime{name: name, open: open, err: errNoPodCIDR}
}

var _ Runtime = (*DeferredRuntime)(nil)

// Opened returns the runtime once opened, else nil.
func (d *DeferredRuntime) Opened() Runtime {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rt
}

func (d *DeferredRuntime) current() (Runtime, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rt == nil {
		return nil, d.err
	}
	return d.rt, nil
}

// Name is the runtime's name for node status.
func (d *DeferredRuntime) Name() string { return d.name }

// Version is the opened runtime's version, or why there is none.
func (d *DeferredRuntime) Version(ctx context.Context) (string, error) {
	rt, err := d.current()
	if err != nil {
		return "", err
	}
	return rt.Version(ctx)
}

// Ready tells why the node cannot run pods, if it cannot.
func (d *DeferredRuntime) Ready(ctx context.Context) error {
	rt, err := d.current()
	if err != nil {
		return err
	}
	if rc, ok := rt.(readinessChecker); ok {
		return rc.Ready(ctx)
	}
	return nil
}

// NodeImages lists the opened runtime's images for node status.
func (d *DeferredRuntime) NodeImages(ctx context.Context) ([]corev1.ContainerImage, error) {
	rt, err := d.current()
	if err != nil {
		return nil, err
	}
	if il, ok := rt.(imageLister); ok {
		return il.NodeImages(ctx)
	}
	return nil, errors.New("the runtime lists no images")
}

// RuntimeHandlers are the opened runtime's handlers for node status
// (RuntimeHandlerLister); none before it opens.
func (d *DeferredRuntime) RuntimeHandlers() []corev1.NodeRuntimeHandler {
	rt, err := d.current()
	if err != nil {
		return nil
	}
	if hl, ok := rt.(RuntimeHandlerLister); ok {
		return hl.RuntimeHandlers()
	}
	return nil
}

// SyncPod runs the pod on the opened runtime; before that it fails, and the
// agent retries.
func (d *DeferredRuntime) SyncPod(ctx context.Context, pod *corev1.Pod, podIP string) (PodState, error) {
	rt, err := d.current()
	if err != nil {
		return PodState{}, fmt.Errorf("container runtime not ready: %w", err)
	}
	return rt.SyncPod(ctx, pod, podIP)
}

// KillPod stops the pod on the opened runtime. Before it is opened nothing
// can have been started by this agent process, but a previous one may have
// left containers: the kill waits for the runtime rather than lose them.
func (d *DeferredRuntime) KillPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	rt, err := d.current()
	if err != nil {
		return fmt.Errorf("container runtime not ready: %w", err)
	}
	return rt.KillPod(ctx, pod, grace)
}

// StopPod stops the pod on the opened runtime, reporting how its containers
// ended when that runtime can tell (a PodStopper); otherwise it kills the pod
// and reports nothing.
func (d *DeferredRuntime) StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (PodState, error) {
	rt, err := d.current()
	if err != nil {
		return PodState{}, fmt.Errorf("container runtime not ready: %w", err)
	}
	if s, ok := rt.(PodStopper); ok {
		return s.StopPod(ctx, pod, grace)
	}
	return PodState{}, rt.KillPod(ctx, pod, grace)
}

// OnPodChange passes changed on to the runtime once it is opened, if it
// tells of changes.
func (d *DeferredRuntime) OnPodChange(changed func(types.UID)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onChange = changed
	if n, ok := d.rt.(ChangeNotifier); ok {
		n.OnPodChange(changed)
	}
}

// NeedsResync asks for periodic syncs when the opened runtime does (and
// while it is not open, so that waiting pods are retried).
func (d *DeferredRuntime) NeedsResync() bool {
	rt := d.Opened()
	if rt == nil {
		return true
	}
	_, periodic := rt.(interface{ NeedsResync() bool })
	return periodic
}

// tryOpen calls the opener once; it returns whether the runtime is open and
// whether the not-ready reason changed.
func (d *DeferredRuntime) tryOpen(ctx context.Context, podCIDR string) (opened, changed bool) {
	rt, err := d.open(ctx, podCIDR)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		changed = d.err == nil || d.err.Error() != err.Error()
		d.err = err
		return false, changed
	}
	d.rt, d.err = rt, nil
	if n, ok := rt.(ChangeNotifier); ok && d.onChange != nil {
		n.OnPodChange(d.onChange)
	}
	return true, true
}

// openDeferred waits for the node's pod CIDR, then opens the runtime,
// retrying every retry while it fails. Every change of the not-ready
// reason, and the opening itself, is written to node status at once rather
// than at the next heartbeat; pods queued meanwhile are synced again.
func (a *Agent) openDeferred(ctx context.Context, d *DeferredRuntime, registered *corev1.Node, retry time.Duration) {
	cidr := registered.Spec.PodCIDR
	for cidr == "" {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		n, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			continue
		}
		cidr = n.Spec.PodCIDR
	}
	a.setPodCIDR(&corev1.Node{Spec: corev1.NodeSpec{PodCIDR: cidr}})
	for {
		opened, changed := d.tryOpen(ctx, cidr)
		if changed {
			if _, err := a.node.updateStatus(ctx); err != nil && ctx.Err() == nil {
				a.cfg.Logger.Warn("updating node status", "err", err)
			}
		}
		if opened {
			a.cfg.Logger.Info("container runtime opened", "runtime", d.Name(), "podCIDR", cidr)
			for _, key := range a.indexer.ListKeys() {
				a.queue.Add(key)
			}
			return
		}
		if changed {
			_, err := d.current()
			a.cfg.Logger.Warn("container runtime not ready; retrying", "err", err, "every", retry)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}
