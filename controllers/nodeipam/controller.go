package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager.
const Name = "nodeipam-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "cidrAllocator"

// Defaults match k3s.
const (
	DefaultClusterCIDR  = "10.42.0.0/16"
	DefaultNodeMaskSize = 24
)

// Options configure the controller; zero values mean the defaults.
type Options struct {
	ClusterCIDR  string
	NodeMaskSize int
	// ServiceCIDR is the Service IP range (kube-controller-manager's --service-cluster-ip-range): no
	// pod CIDR is handed out inside it. "" means none.
	ServiceCIDR string
	Logger      *slog.Logger
}

// Controller assigns pod CIDRs to nodes.
type Controller struct {
	client     kubernetes.Interface
	nodeLister corelisters.NodeLister
	synced     []cache.InformerSynced
	queue      runner.Queue
	recorder   record.EventRecorder
	log        *slog.Logger

	mu     sync.Mutex
	alloc  *allocator
	loaded bool
}

// New validates the CIDR settings and wires the controller to the node informer.
func New(client kubernetes.Interface, nodeInformer coreinformers.NodeInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || nodeInformer == nil || recorder == nil {
		return nil, fmt.Errorf("nodeipam: client, informer and recorder are required")
	}
	if opts.ClusterCIDR == "" {
		opts.ClusterCIDR = DefaultClusterCIDR
	}
	if opts.NodeMaskSize == 0 {
		opts.NodeMaskSize = DefaultNodeMaskSize
	}
	alloc, err := newAllocator(opts.ClusterCIDR, opts.NodeMaskSize, opts.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, nodeLister: nodeInformer.Lister(),
		synced: []cache.InformerSynced{nodeInformer.Informer().HasSynced},
		queue:  runner.NewQueue(Name), recorder: recorder, log: opts.Logger, alloc: alloc,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes nodes until ctx ends. One worker is enough; allocation is serialised anyway.
// A node whose CIDR cannot be written is retried with backoff until it can, as
// Kubernetes' range allocator retries it: without one, its pods get no network.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// load records every CIDR already on a node, once, before the first allocation.
func (c *Controller) load() error {
	if c.loaded {
		return nil
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for _, cidr := range cidrsOf(n) {
			if other := c.alloc.occupy(n.Name, cidr); other != "" {
				c.log.Warn("pod CIDR overlaps another holder's", "node", n.Name, "cidr", cidr, "holder", c.alloc.holder(other))
			}
		}
	}
	c.loaded = true
	return nil
}

func cidrsOf(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func (c *Controller) sync(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.load(); err != nil {
		return err
	}
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		c.alloc.release(name)
		return nil
	}
	if err != nil {
		return err
	}
	if node.DeletionTimestamp != nil {
		// Going: its subnet is free for others now, as the range
		// allocator releases it, not once finalizers let the Node go.
		c.alloc.release(name)
		return nil
	}
	if existing := cidrsOf(node); len(existing) > 0 {
		for _, cidr := range existing {
			if other := c.alloc.occupy(node.Name, cidr); other != "" {
				c.recorder.Eventf(node, corev1.EventTypeWarning, "CIDRNotAvailable", "Node %s has pod CIDR %s, which overlaps %s", node.Name, cidr, c.alloc.holder(other))
			}
		}
		c.alloc.settle(node.Name, existing)
		return nil
	}
	cidr, err := c.alloc.allocate(node.Name)
	if err != nil {
		// A status change, Normal as kube-controller-manager records it.
		c.recorder.Eventf(node, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", node.Name)
		return err
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr, "podCIDRs": []string{cidr}}})
	// As the range allocator, a few tries before the failure is told.
	for try := 1; ; try++ {
		_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) || try == patchTries || ctx.Err() != nil {
			break
		}
	}
	if apierrors.IsNotFound(err) {
		c.alloc.release(node.Name)
		return nil
	}
	if err != nil {
		c.recorder.Eventf(node, corev1.EventTypeWarning, "CIDRAssignmentFailed", "Node %s: failed to set pod CIDR %s: %v", node.Name, cidr, err)
		// Keep the allocation: the retry patches the same CIDR.
		return fmt.Errorf("set pod CIDR of node %s: %w", node.Name, err)
	}
	c.log.Info("assigned pod CIDR", "node", node.Name, "cidr", cidr)
	return nil
}

// patchTries is how often a node's CIDR patch is tried in one sync
// (kube-controller-manager's cidrUpdateRetries).
const patchTries = 3
