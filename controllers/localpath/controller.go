package localpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Name is the controller's name in logs, events and the manager.
const Name = "local-path-provisioner"

// Provisioner is the provisioner name StorageClasses use to ask for
// local-path volumes.
const Provisioner = "skiff.io/local-path"

// DirAnnotation on a Node names the directory its local-path volumes live
// in; the node agent sets it.
const DirAnnotation = "skiff.io/local-path-dir"

// DefaultDir is the node agent's directory for local-path volumes with the
// default data directory; hollow nodes announce it too.
const DefaultDir = "/var/lib/skiff/agent/storage"

// Event reasons, as external provisioners record them.
const (
	reasonProvisioningSucceeded = "ProvisioningSucceeded"
	reasonProvisioningFailed    = "ProvisioningFailed"
	reasonProvisioning          = "Provisioning"
)

// Options tune the provisioner.
type Options struct {
	Logger *slog.Logger
}

// Controller provisions local-path volumes.
type Controller struct {
	client   kubernetes.Interface
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    runner.Queue
	recorder record.EventRecorder
	log      *slog.Logger
}

// New wires the provisioner to the informers.
func New(client kubernetes.Interface, claims coreinformers.PersistentVolumeClaimInformer, volumes coreinformers.PersistentVolumeInformer,
	classes storageinformers.StorageClassInformer, nodes coreinformers.NodeInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || claims == nil || volumes == nil || classes == nil || nodes == nil || recorder == nil {
		return nil, fmt.Errorf("localpath: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, claims: claims.Lister(), volumes: volumes.Lister(), classes: classes.Lister(), nodes: nodes.Lister(),
		synced: []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced,
			classes.Informer().HasSynced, nodes.Informer().HasSynced},
		queue: runner.NewQueue(Name), recorder: recorder, log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	enqueue := func(obj any) {
		if key, ok := runner.KeyOf(obj); ok {
			c.queue.Add(key)
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	// A provisioned volume deleted before its claim was bound is made again.
	if _, err := volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if pv, ok := runner.Object[*corev1.PersistentVolume](obj); ok && pv.Spec.ClaimRef != nil {
				c.queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run provisions until ctx ends. A claim whose provisioning fails is retried
// with backoff until it succeeds, as the binder retries a claim it failed on:
// dropped, the claim and its pod would stay Pending.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

// VolumeName is the name of the volume provisioned for a claim, as
// Kubernetes' provisioners name them.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.DeletionTimestamp != nil || claim.Spec.VolumeName != "" || claim.Status.Phase == corev1.ClaimBound {
		return nil
	}
	className := volumehelpers.GetPersistentVolumeClaimClass(claim)
	if className == "" {
		return nil
	}
	class, err := c.classes.Get(className)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if class.Provisioner != Provisioner {
		return nil
	}
	nodeName := claim.Annotations[volumehelpers.AnnSelectedNode]
	if nodeName == "" {
		if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			c.failed(claim, class, "local-path volumes live on one node: use volumeBindingMode WaitForFirstConsumer so that the scheduler picks it")
		}
		return nil
	}
	if claim.Annotations[volumehelpers.AnnStorageProvisioner] != Provisioner && claim.Annotations[volumehelpers.AnnBetaStorageProvisioner] != Provisioner {
		// The binder has not given up on existing volumes yet: it marks
		// the claim for us when none fits (Kubernetes' protocol).
		return nil
	}
	if _, err := c.volumes.Get(VolumeName(claim)); err == nil {
		return nil // made already; the binder binds it
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if problem := unsupported(claim); problem != "" {
		c.failed(claim, class, problem)
		return nil
	}
	pv, err := c.volumeFor(claim, class, nodeName)
	var resched *rescheduleError
	if errors.As(err, &resched) {
		// The node cannot hold the volume: give the choice back to the
		// scheduler, as Kubernetes' external provisioners do.
		c.failed(claim, class, err.Error())
		return c.reschedule(ctx, claim)
	}
	if err != nil {
		c.failed(claim, class, err.Error())
		return err
	}
	c.recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioning, "External provisioner is provisioning volume for claim %q", ns+"/"+name)
	_, err = c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.recorder.Eventf(claim, corev1.EventTypeNormal, reasonProvisioningSucceeded, "Successfully provisioned volume %s", pv.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	default:
		c.failed(claim, class, fmt.Sprintf("creating volume %s: %v", pv.Name, err))
		return err
	}
}

// failed records a ProvisioningFailed event in the external provisioners'
// words.
func (c *Controller) failed(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, problem string) {
	c.recorder.Eventf(claim, corev1.EventTypeWarning, reasonProvisioningFailed, "failed to provision volume with StorageClass %q: %s", class.Name, problem)
}

// rescheduleError is a failure of the selected node, which another node may
// not have.
type rescheduleError struct{ msg string }

func (e *rescheduleError) Error() string { return e.msg }

// reschedule removes the claim's selected-node annotation, so that the
// scheduler's VolumeBinding plugin, waiting for the claim, gives up on that
// node and schedules the pod again.
func (c *Controller) reschedule(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	cl := claim.DeepCopy()
	delete(cl.Annotations, volumehelpers.AnnSelectedNode)
	_, err := c.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// unsupported says why a claim cannot get a local-path volume ("" if it can).
func unsupported(claim *corev1.PersistentVolumeClaim) string {
	for _, m := range claim.Spec.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return fmt.Sprintf("local-path volumes support only ReadWriteOnce and ReadWriteOncePod, not %s", m)
		}
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return "volumeMode Block is not supported: local-path volumes are filesystems (directories) only"
	}
	if claim.Spec.Selector != nil {
		return "claim Selector is not supported"
	}
	return ""
}

// volumeFor builds the volume for a claim on a node. A node that does not
// exist, or whose agent does not say where it keeps local-path volumes
// (skiff.io/local-path-dir, absolute), is a rescheduleError.
func (c *Controller) volumeFor(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, nodeName string) (*corev1.PersistentVolume, error) {
	node, err := c.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return nil, &rescheduleError{fmt.Sprintf("failed to get target node: node %q not found", nodeName)}
	}
	if err != nil {
		return nil, err
	}
	dir, hostname := node.Annotations[DirAnnotation], nodeName
	if h := node.Labels[corev1.LabelHostname]; h != "" {
		hostname = h
	}
	if dir == "" {
		return nil, &rescheduleError{fmt.Sprintf("node %q has no %s annotation: its agent does not keep local-path volumes", nodeName, DirAnnotation)}
	}
	if !path.IsAbs(dir) {
		return nil, &rescheduleError{fmt.Sprintf("node %q: %s %q is not an absolute path", nodeName, DirAnnotation, dir)}
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	mode := corev1.PersistentVolumeFilesystem
	name := VolumeName(claim)
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   append([]corev1.PersistentVolumeAccessMode(nil), claim.Spec.AccessModes...),
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			VolumeMode:                    &mode,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path.Join(dir, name)}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}, nil
}
