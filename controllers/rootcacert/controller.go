package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs and the manager (Kubernetes').
const Name = "root-ca-cert-publisher"

// The published ConfigMap, as Kubernetes writes it.
const (
	ConfigMapName         = "kube-root-ca.crt"
	CAKey                 = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints " +
		"such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// ErrNoRootCA is returned by New when Options.RootCA is empty: there is
// nothing to publish.
var ErrNoRootCA = errors.New("rootcacert: no root CA to publish")

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
	// RootCA is the CA bundle (PEM) published as ca.crt; required.
	RootCA []byte
}

// Controller keeps kube-root-ca.crt in every active namespace.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	queue      runner.Queue
	rootCA     string
	log        *slog.Logger
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, nsInformer coreinformers.NamespaceInformer, cmInformer coreinformers.ConfigMapInformer, opts Options) (*Controller, error) {
	if client == nil || nsInformer == nil || cmInformer == nil {
		return nil, fmt.Errorf("rootcacert: client and informers are required")
	}
	if len(opts.RootCA) == 0 {
		return nil, ErrNoRootCA
	}
	c := &Controller{
		client: client, namespaces: nsInformer.Lister(), configMaps: cmInformer.Lister(),
		synced: []cache.InformerSynced{nsInformer.Informer().HasSynced, cmInformer.Informer().HasSynced},
		queue:  runner.NewQueue(Name), rootCA: string(opts.RootCA), log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueNamespace, UpdateFunc: func(_, cur any) { c.enqueueNamespace(cur) },
	}); err != nil {
		return nil, err
	}
	// Kubernetes reacts to updates and deletes; skiff also to adds, so that
	// a create lost to someone else's ConfigMap (AlreadyExists, not retried)
	// still brings that ConfigMap to sync.
	if _, err := cmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueConfigMap, UpdateFunc: func(_, cur any) { c.enqueueConfigMap(cur) }, DeleteFunc: c.enqueueConfigMap,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes namespaces until ctx ends. A namespace whose ConfigMap
// cannot be written is retried with backoff until it can, as Kubernetes'
// publisher retries it: no event is due to bring the namespace back (its
// informer resyncs twice a day), and pods there cannot start without the CA.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := runner.Object[*corev1.Namespace](obj); ok {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) enqueueConfigMap(obj any) {
	if cm, ok := runner.Object[*corev1.ConfigMap](obj); ok && cm.Name == ConfigMapName {
		c.queue.Add(cm.Namespace)
	}
}

// sync makes kube-root-ca.crt in namespace right.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		return c.create(ctx, namespace)
	}
	if err != nil {
		return err
	}
	if c.published(cm) {
		return nil
	}
	out := cm.DeepCopy()
	out.Data = map[string]string{CAKey: c.rootCA}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	// As Kubernetes: a description of one's own is kept only while nothing needs repair; a
	// repaired ConfigMap gets the standard one.
	out.Annotations[DescriptionAnnotation] = Description
	_, err = c.client.CoreV1().ConfigMaps(namespace).Update(ctx, out, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil // deleted or changed since the cache saw it; that event enqueues the namespace again
	default:
		return fmt.Errorf("updating %s/%s: %w", namespace, ConfigMapName, err)
	}
}

func (c *Controller) create(ctx context.Context, namespace string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: namespace,
			Annotations: map[string]string{DescriptionAnnotation: Description}},
		Data: map[string]string{CAKey: c.rootCA},
	}
	_, err := c.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil // its add event enqueues the namespace, and sync checks what it holds
	case apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil // the namespace is gone or going
	default:
		return fmt.Errorf("creating %s/%s: %w", namespace, ConfigMapName, err)
	}
}

// published reports whether cm holds exactly the CA and a description
// (any, as Kubernetes accepts). Other labels and annotations, and
// binaryData, are not the controller's.
func (c *Controller) published(cm *corev1.ConfigMap) bool {
	return maps.Equal(cm.Data, map[string]string{CAKey: c.rootCA}) && cm.Annotations[DescriptionAnnotation] != ""
}
