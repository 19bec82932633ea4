package persistentvolume

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager.
const Name = "persistentvolume-binder-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "persistentvolume-controller"

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
}

// Controller binds claims to volumes.
type Controller struct {
	client      kubernetes.Interface
	claims      corelisters.PersistentVolumeClaimLister
	volumes     corelisters.PersistentVolumeLister
	classes     storagelisters.StorageClassLister
	nodes       corelisters.NodeLister
	volumeIndex cache.Indexer
	synced      []cache.InformerSynced
	queue       runner.Queue
	recorder    record.EventRecorder
	log         *slog.Logger
}

// Queue keys: claims are "claim/<ns>/<name>", volumes "volume/<name>".
const (
	claimKeyPrefix  = "claim/"
	volumeKeyPrefix = "volume/"
)

// New wires the controller to the informers.
func New(client kubernetes.Interface, claims coreinformers.PersistentVolumeClaimInformer, volumes coreinformers.PersistentVolumeInformer,
	classes storageinformers.StorageClassInformer, nodes coreinformers.NodeInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || claims == nil || volumes == nil || classes == nil || nodes == nil || recorder == nil {
		return nil, fmt.Errorf("persistentvolume: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, claims: claims.Lister(), volumes: volumes.Lister(), classes: classes.Lister(), nodes: nodes.Lister(),
		volumeIndex: volumes.Informer().GetIndexer(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced,
			classes.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: runner.NewQueue(Name), recorder: recorder, log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	enqueueClaim := func(obj any) {
		if key, ok := runner.KeyOf(obj); ok {
			c.queue.Add(claimKeyPrefix + key)
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueClaim,
		UpdateFunc: func(_, cur any) { enqueueClaim(cur) },
		DeleteFunc: func(obj any) {
			// The volume it was bound to is now released.
			if pvc, ok := runner.Object[*corev1.PersistentVolumeClaim](obj); ok && pvc.Spec.VolumeName != "" {
				c.queue.Add(volumeKeyPrefix + pvc.Spec.VolumeName)
			}
		},
	}); err != nil {
		return nil, err
	}
	enqueueVolume := func(obj any) {
		pv, ok := runner.Object[*corev1.PersistentVolume](obj)
		if !ok {
			return
		}
		c.queue.Add(volumeKeyPrefix + pv.Name)
		if ref := pv.Spec.ClaimRef; ref != nil {
			c.queue.Add(claimKeyPrefix + ref.Namespace + "/" + ref.Name)
		} else {
			// A free volume may fit a claim that is waiting: made before
			// it, or released.
			c.enqueueUnbound(&pv.Spec.StorageClassName)
		}
	}
	if _, err := volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueVolume,
		UpdateFunc: func(_, cur any) { enqueueVolume(cur) },
		DeleteFunc: func(obj any) {
			// A claim bound to it is now Lost; an unbound one may fit another.
			if pv, ok := runner.Object[*corev1.PersistentVolume](obj); ok && pv.Spec.ClaimRef != nil {
				c.queue.Add(claimKeyPrefix + pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// resync is how often every unbound claim is tried again, as Kubernetes'
// --pvclaimbinder-sync-period (15s).
const resync = 15 * time.Second

// Run binds until ctx ends. A claim or volume whose sync fails is retried
// with backoff until it succeeds: Kubernetes' binder takes up every claim and
// volume again each resync period, so none it failed on is ever left behind.
func (c *Controller) Run(ctx context.Context, workers int) {
	go wait.UntilWithContext(ctx, func(context.Context) { c.enqueueUnbound(nil) }, resync)
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

// enqueueUnbound queues the claims not bound to a volume yet: of the class
// named, or all of them for nil.
func (c *Controller) enqueueUnbound(class *string) {
	claims, err := c.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, cl := range claims {
		if cl.Spec.VolumeName != "" || cl.DeletionTimestamp != nil {
			continue
		}
		if class != nil && volumehelpers.GetPersistentVolumeClaimClass(cl) != *class {
			continue
		}
		c.queue.Add(claimKeyPrefix + cl.Namespace + "/" + cl.Name)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	switch {
	case strings.HasPrefix(key, claimKeyPrefix):
		ns, name, err := cache.SplitMetaNamespaceKey(strings.TrimPrefix(key, claimKeyPrefix))
		if err != nil {
			return nil
		}
		return c.syncClaim(ctx, ns, name)
	case strings.HasPrefix(key, volumeKeyPrefix):
		return c.syncVolume(ctx, strings.TrimPrefix(key, volumeKeyPrefix))
	}
	return nil
}
