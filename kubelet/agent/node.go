package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// NodeLeaseNamespace holds the nodes' heartbeat Leases.
const NodeLeaseNamespace = "kube-node-lease"

// cordonedByAgent marks a cordon the agent made at shutdown, so that its
// next start lifts that one and never a cordon an administrator made.
const cordonedByAgent = "skiff.io/cordoned-at-shutdown"

// readinessChecker is implemented by runtimes that can be unready (e.g. a
// containerd socket that is missing); the Ready condition then says why.
type readinessChecker interface {
	Ready(ctx context.Context) error
}

// imageLister is implemented by runtimes that store images: node status
// lists them (status.images) as the kubelet does.
type imageLister interface {
	NodeImages(ctx context.Context) ([]corev1.ContainerImage, error)
}

// node keeps one Node object, its status heartbeat and its Lease.
type node struct {
	cfg     Config
	client  Client
	runtime Runtime
	// poked asks the heartbeat for a status update now (a pressure
	// condition flipped).
	poked chan struct{}
	// lease is the node's Lease as last written, so a renewal is one
	// update rather than a get and an update (the kubelet's lease
	// controller keeps it likewise); only the heartbeat goroutine uses it.
	lease *coordinationv1.Lease
	// reported is when the status was last written (unix nanoseconds).
	reported atomic.Int64
}

// poke asks for a status update without waiting for the next interval.
func (n *node) poke() {
	select {
	case n.poked <- struct{}{}:
	default:
	}
}

// pressureConditions are the kubelet's three pressure conditions, with
// its reasons, messages and the Node Events of their transitions.
var pressureConditions = []struct {
	typ                   corev1.NodeConditionType
	okReason, okMessage   string
	badReason, badMessage string
	okEvent, badEvent     string
}{
	{corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasSufficientMemory", "NodeHasInsufficientMemory"},
	{corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
		"KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasNoDiskPressure", "NodeHasDiskPressure"},
	{corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available",
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasSufficientPID", "NodeHasInsufficientPID"},
}

// pressure returns the pressure conditions as the monitor sees them (all
// False without one), and the Events of those whose status differs from
// the node's current conditions.
func (n *node) pressure(cur []corev1.NodeCondition) (conds []corev1.NodeCondition, events []string) {
	for _, p := range pressureConditions {
		c := corev1.NodeCondition{Type: p.typ, Status: corev1.ConditionFalse, Reason: p.okReason, Message: p.okMessage}
		event := p.okEvent
		if n.cfg.Pressure != nil && n.cfg.Pressure.UnderPressure(p.typ) {
			c = corev1.NodeCondition{Type: p.typ, Status: corev1.ConditionTrue, Reason: p.badReason, Message: p.badMessage}
			event = p.badEvent
		}
		conds = append(conds, c)
		was := corev1.ConditionUnknown
		for _, old := range cur {
			if old.Type == p.typ {
				was = old.Status
			}
		}
		// The kubelet records the transitions; a first report of False
		// (registration) is one too.
		if was != c.Status {
			events = append(events, event)
		}
	}
	return conds, events
}

// nodeRef is the Node as the kubelet refers to it in Events.
func (n *node) nodeRef() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: n.cfg.NodeName, UID: types.UID(n.cfg.NodeName)}
}

// register creates the Node with its status, as a kubelet registers, or
// brings an existing one's labels, taints and status up to date (a restarted
// agent keeps the user's labels).
func (n *node) register(ctx context.Context) (*corev1.Node, error) {
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Labels: n.labels(), Annotations: n.cfg.Annotations},
		Spec:       corev1.NodeSpec{Taints: n.cfg.Taints},
	}
	rs := n.observeRuntime(ctx)
	events := n.fillStatus(&want.Status, rs, metav1.Now())
	created, err := n.client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		// One request instead of three (create, read, status write): at
		// a thousand hollow nodes registering at once, that is what
		// keeps the API server's queue short.
		n.reported.Store(time.Now().UnixNano())
		n.recordPressureEvents(events)
		return created, nil
	case apierrors.IsAlreadyExists(err):
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			for k, v := range n.labels() {
				cur.Labels[k] = v
			}
			for k, v := range n.cfg.Annotations {
				metav1.SetMetaDataAnnotation(&cur.ObjectMeta, k, v)
			}
			if cur.Annotations[cordonedByAgent] == "true" {
				// Undo our own shutdown cordon, never an administrator's.
				cur.Spec.Unschedulable = false
				delete(cur.Annotations, cordonedByAgent)
			}
			_, err = n.client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("updating node %s: %w", n.cfg.NodeName, err)
		}
	default:
		return nil, fmt.Errorf("registering node %s: %w", n.cfg.NodeName, err)
	}
	return n.writeStatus(ctx, rs)
}

// The deprecated OS and architecture labels (k8s.io/kubelet's
// kubeletapis.LabelOS and LabelArch).
const (
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
)

func (n *node) labels() map[string]string {
	// The kubelet still sets the deprecated beta labels too (old
	// nodeSelectors use them); without them the node lifecycle controller
	// would patch each node as it first sees it.
	l := map[string]string{
		corev1.LabelHostname:   n.cfg.NodeName,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
		betaLabelOS:            runtime.GOOS,
		betaLabelArch:          runtime.GOARCH,
	}
	for k, v := range n.cfg.Labels {
		l[k] = v
	}
	return l
}

// runtimeState is what node status reports of the container runtime, read
// once per status update rather than per conflict retry.
type runtimeState struct {
	version string
	// ready is why the runtime cannot run pods; nil when it can.
	ready error
	// images are the runtime's images, when listed is true.
	images []corev1.ContainerImage
	listed bool
	// handlers are the runtime's handlers (RuntimeHandlerLister).
	handlers []corev1.NodeRuntimeHandler
}

func (n *node) observeRuntime(ctx context.Context) runtimeState {
	var rs runtimeState
	var verr error
	rs.version, verr = n.runtime.Version(ctx)
	rs.ready = verr
	if rc, ok := n.runtime.(readinessChecker); ok && rs.ready == nil {
		rs.ready = rc.Ready(ctx)
	}
	if hl, ok := n.runtime.(RuntimeHandlerLister); ok {
		rs.handlers = hl.RuntimeHandlers()
	}
	if il, ok := n.runtime.(imageLister); ok && rs.ready == nil {
		var err error
		if rs.images, err = il.NodeImages(ctx); err == nil {
			rs.listed = true
		} else {
			n.cfg.Logger.Warn("listing images for node status", "err", err)
		}
	}
	return rs
}

// fillStatus writes capacity, addresses, node info and fresh conditions
// into st, and returns the Events of the pressure conditions that changed.
func (n *node) fillStatus(st *corev1.NodeStatus, rs runtimeState, now metav1.Time) (events []string) {
	st.Capacity, st.Allocatable = n.cfg.Capacity, n.cfg.Allocatable
	st.Addresses = n.cfg.Addresses
	st.NodeInfo = n.cfg.NodeInfo
	st.DaemonEndpoints.KubeletEndpoint.Port = n.cfg.DaemonPort
	if rs.version != "" {
		st.NodeInfo.ContainerRuntimeVersion = n.runtime.Name() + "://" + rs.version
	}
	st.Phase = corev1.NodeRunning
	if rs.listed {
		st.Images = rs.images
	}
	// As the v1.33 kubelet: the handlers the runtime reports, none when
	// it reports none.
	st.RuntimeHandlers = rs.handlers
	readyCond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if rs.ready != nil {
		readyCond = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down: " + rs.ready.Error()}
	}
	conds, events := n.pressure(st.Conditions)
	for _, c := range append(conds, readyCond) {
		setNodeCondition(st, c, now)
	}
	return events
}

// updateStatus writes capacity, addresses, node info and fresh conditions.
func (n *node) updateStatus(ctx context.Context) (*corev1.Node, error) {
	return n.writeStatus(ctx, n.observeRuntime(ctx))
}

// writeStatus is updateStatus with the runtime already observed.
func (n *node) writeStatus(ctx context.Context, rs runtimeState) (*corev1.Node, error) {
	var out *corev1.Node
	var events []string
	attempt := 0
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// The first read may come from the API server's cache, as the
		// kubelet's does: most refreshes write nothing, and a stale copy
		// only costs a conflict and a fresh read.
		opts := metav1.GetOptions{}
		if attempt == 0 {
			opts.ResourceVersion = "0"
		}
		attempt++
		orig, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, opts)
		if err != nil {
			return err
		}
		cur := orig.DeepCopy()
		events = n.fillStatus(&cur.Status, rs, metav1.Now())
		if sameButHeartbeats(&orig.Status, &cur.Status) && time.Since(time.Unix(0, n.reported.Load())) < n.cfg.StatusReportInterval {
			out = cur // nothing to say yet: the Lease tells the node is alive
			return nil
		}
		out, err = n.client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			n.reported.Store(time.Now().UnixNano())
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating status of node %s: %w", n.cfg.NodeName, err)
	}
	n.recordPressureEvents(events)
	return out, nil
}

// recordPressureEvents records the pressure conditions' transitions. Only
// a node that measures records them: a thousand hollow nodes would write
// three Events each at registration, all saying nothing.
func (n *node) recordPressureEvents(events []string) {
	if n.cfg.Recorder == nil || n.cfg.Pressure == nil {
		return
	}
	for _, e := range events {
		n.cfg.Recorder.Eventf(n.nodeRef(), corev1.EventTypeNormal, e, "Node %s status is now: %s", n.cfg.NodeName, e)
	}
}

// sameButHeartbeats says whether two node statuses differ only in their
// conditions' heartbeat times.
func sameButHeartbeats(a, b *corev1.NodeStatus) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, st := range []*corev1.NodeStatus{a, b} {
		for i := range st.Conditions {
			st.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// setNodeCondition refreshes the heartbeat and moves the transition time only
// when the status changes, as the kubelet does.
func setNodeCondition(st *corev1.NodeStatus, c corev1.NodeCondition, now metav1.Time) {
	c.LastHeartbeatTime = now
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		if st.Conditions[i].Status != c.Status {
			c.LastTransitionTime = now
		}
		st.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
}

// heartbeat renews the Lease every quarter of its duration and refreshes the
// status every StatusUpdateInterval, until ctx ends. The Node each refresh
// reads or writes goes to seen: the agent learns there the pod CIDR that the
// node IPAM controller assigns after registration, before a pod needs it.
func (n *node) heartbeat(ctx context.Context, owner *corev1.Node, seen func(*corev1.Node)) {
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := n.renewLease(ctx, owner); err != nil && ctx.Err() == nil {
			n.cfg.Logger.Warn("renewing node lease failed", "err", err)
		}
	}, n.cfg.LeaseDuration/4)
	// register has just written the status: the first refresh is one
	// interval later.
	t := time.NewTicker(n.cfg.StatusUpdateInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.poked:
		}
		out, err := n.updateStatus(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.cfg.Logger.Warn("node status heartbeat failed", "err", err)
			}
			continue
		}
		seen(out)
	}
}

// The lease controller's patience (k8s.io/component-helpers' lease
// controller): a renewal tries the update this many times in a row before
// it reads the lease again, and waits at most maxLeaseBackoff between reads
// that fail. A failed update is tried again at once, not a renewal interval
// later, when a quarter of the lease's duration would already be gone.
const (
	maxLeaseUpdates = 5
	maxLeaseBackoff = 7 * time.Second
)

// renewLease renews the node's Lease: an update of the lease last written
// (no read), else, that failing, the lease read again (created if missing)
// and updated. It returns only once renewed, ctx ended, or the updates
// failed maxLeaseUpdates times in a row after a successful read.
func (n *node) renewLease(ctx context.Context, owner *corev1.Node) error {
	if n.lease != nil {
		err := n.updateLease(ctx, owner, n.lease)
		if err == nil || ctx.Err() != nil {
			return err
		}
		n.cfg.Logger.Info("renewing node lease failed, reading it again", "err", err)
	}
	lease, created, err := n.ensureLease(ctx, owner)
	if err != nil || created {
		return err
	}
	return n.updateLease(ctx, owner, lease)
}

// updateLease renews base with up to maxLeaseUpdates updates; one that
// conflicts (or finds the lease gone) reads it again (ensureLease) first.
func (n *node) updateLease(ctx context.Context, owner *corev1.Node, base *coordinationv1.Lease) error {
	leases := n.client.CoordinationV1().Leases(NodeLeaseNamespace)
	var err error
	for range maxLeaseUpdates {
		renewed := base.DeepCopy()
		n.renew(&renewed.Spec)
		var out *coordinationv1.Lease
		if out, err = leases.Update(ctx, renewed, metav1.UpdateOptions{}); err == nil {
			n.lease = out
			return nil
		}
		n.lease = nil
		if ctx.Err() != nil {
			return err
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Changed or deleted by someone else.
			lease, created, err := n.ensureLease(ctx, owner)
			if err != nil || created {
				return err
			}
			base = lease
		}
	}
	return fmt.Errorf("%d updates failed, the last: %w", maxLeaseUpdates, err)
}

// ensureLease reads the node's Lease, creating it if there is none, and
// tries again with a growing wait while that fails, until ctx ends. It says
// whether it created the lease (renewed by that).
func (n *node) ensureLease(ctx context.Context, owner *corev1.Node) (*coordinationv1.Lease, bool, error) {
	leases := n.client.CoordinationV1().Leases(NodeLeaseNamespace)
	backoff := 100 * time.Millisecond
	for {
		cur, err := leases.Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		created := false
		if apierrors.IsNotFound(err) {
			lease := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Namespace: NodeLeaseNamespace,
					// Owned by the Node, so deleting the node collects its lease.
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: owner.Name, UID: owner.UID}}},
			}
			n.renew(&lease.Spec)
			cur, err = leases.Create(ctx, lease, metav1.CreateOptions{})
			created = true
		}
		if err == nil {
			if created {
				n.lease = cur
			}
			return cur, created, nil
		}
		backoff = min(2*backoff, maxLeaseBackoff)
		n.cfg.Logger.Warn("reading node lease failed", "retry in", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, err
		case <-t.C:
		}
	}
}

// renew sets the lease spec's holder, duration and renew time (now).
func (n *node) renew(spec *coordinationv1.LeaseSpec) {
	now := metav1.NewMicroTime(time.Now())
	spec.HolderIdentity = ptr.To(n.cfg.NodeName)
	spec.LeaseDurationSeconds = ptr.To(int32(n.cfg.LeaseDuration / time.Second))
	spec.RenewTime = &now
}

// cordon marks the node unschedulable (graceful shutdown).
func (n *node) cordon(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Spec.Unschedulable {
			return nil // already cordoned (perhaps by an administrator): leave it theirs
		}
		cur.Spec.Unschedulable = true
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[cordonedByAgent] = "true"
		_, err = n.client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}
