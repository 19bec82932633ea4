package volumeprotection

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager.
const Name = "volume-protection-controller"

// Finalizers, as Kubernetes' (the admission plugin adds them).
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// claimIndex indexes pods by the "namespace/claim" keys they mount.
const claimIndex = "pvc"

const (
	claimKeyPrefix  = "claim/"
	volumeKeyPrefix = "volume/"
)

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
}

// Controller removes protection finalizers once it is safe.
type Controller struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	podIndex cache.Indexer
	synced   []cache.InformerSynced
	queue    runner.Queue
	log      *slog.Logger
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, claims coreinformers.PersistentVolumeClaimInformer, volumes coreinformers.PersistentVolumeInformer,
	pods coreinformers.PodInformer, opts Options) (*Controller, error) {
	if client == nil || claims == nil || volumes == nil || pods == nil {
		return nil, fmt.Errorf("volumeprotection: client and informers are required")
	}
	if err := pods.Informer().AddIndexers(cache.Indexers{claimIndex: podClaimKeys}); err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, claims: claims.Lister(), volumes: volumes.Lister(), podIndex: pods.Informer().GetIndexer(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced, pods.Informer().HasSynced},
		queue:  runner.NewQueue(Name), log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	enqueueClaim := func(obj any) {
		if pvc, ok := runner.Object[*corev1.PersistentVolumeClaim](obj); ok && pvc.DeletionTimestamp != nil {
			c.queue.Add(claimKeyPrefix + pvc.Namespace + "/" + pvc.Name)
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueClaim, UpdateFunc: func(_, cur any) { enqueueClaim(cur) },
	}); err != nil {
		return nil, err
	}
	enqueueVolume := func(obj any) {
		if pv, ok := runner.Object[*corev1.PersistentVolume](obj); ok && pv.DeletionTimestamp != nil {
			c.queue.Add(volumeKeyPrefix + pv.Name)
		}
	}
	if _, err := volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueVolume, UpdateFunc: func(_, cur any) { enqueueVolume(cur) },
	}); err != nil {
		return nil, err
	}
	// A pod that finishes or goes may free its claims.
	podDone := func(obj any) {
		keys, _ := podClaimKeys(obj)
		for _, k := range keys {
			c.queue.Add(claimKeyPrefix + k)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			if p, ok := cur.(*corev1.Pod); ok && finished(p) {
				podDone(p)
			}
		},
		DeleteFunc: podDone,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run works until ctx ends. A claim or volume whose finalizer cannot be
// removed is retried with backoff until it can, as Kubernetes' PVC and PV
// protection controllers retry it: dropped, it would stay terminating.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func podClaimKeys(obj any) ([]string, error) {
	p, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			keys = append(keys, p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		}
	}
	return keys, nil
}

// finished pods no longer use their claims.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func usesClaim(p *corev1.Pod, claim string) bool {
	if finished(p) {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
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

func (c *Controller) syncClaim(ctx context.Context, ns, name string) error {
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pvc.DeletionTimestamp == nil || !has(pvc.Finalizers, PVCProtectionFinalizer) {
		return nil
	}
	cached, err := c.podIndex.ByIndex(claimIndex, ns+"/"+name)
	if err != nil {
		return err
	}
	for _, obj := range cached {
		if p, ok := obj.(*corev1.Pod); ok && usesClaim(p, name) {
			return nil // a pod event brings the claim back
		}
	}
	// The cache says free: confirm with the API before letting go.
	live, err := c.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range live.Items {
		if usesClaim(&live.Items[i], name) {
			return nil
		}
	}
	cl := pvc.DeepCopy()
	cl.Finalizers = without(cl.Finalizers, PVCProtectionFinalizer)
	_, err = c.client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil || !has(pv.Finalizers, PVProtectionFinalizer) || pv.Status.Phase == corev1.VolumeBound {
		return nil
	}
	v := pv.DeepCopy()
	v.Finalizers = without(v.Finalizers, PVProtectionFinalizer)
	_, err = c.client.CoreV1().PersistentVolumes().Update(ctx, v, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func has(list []string, f string) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}

func without(list []string, f string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}
