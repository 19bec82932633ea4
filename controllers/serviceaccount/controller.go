package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "serviceaccount-controller"

// DefaultName is the ServiceAccount every namespace gets.
const DefaultName = "default"

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
}

// Controller creates default ServiceAccounts.
type Controller struct {
	client   kubernetes.Interface
	nsLister corelisters.NamespaceLister
	saLister corelisters.ServiceAccountLister
	synced   []cache.InformerSynced
	queue    runner.Queue
	recorder record.EventRecorder
	log      *slog.Logger
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, nsInformer coreinformers.NamespaceInformer, saInformer coreinformers.ServiceAccountInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || nsInformer == nil || saInformer == nil || recorder == nil {
		return nil, fmt.Errorf("serviceaccount: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, nsLister: nsInformer.Lister(), saLister: saInformer.Lister(),
		synced: []cache.InformerSynced{nsInformer.Informer().HasSynced, saInformer.Informer().HasSynced},
		queue:  runner.NewQueue(Name), recorder: recorder, log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueNamespace, UpdateFunc: func(_, cur any) { c.enqueueNamespace(cur) },
	}); err != nil {
		return nil, err
	}
	if _, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
				c.queue.Add(sa.Namespace)
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes namespaces until ctx ends. A namespace whose account
// cannot be created is retried with backoff until it can, as Kubernetes'
// controller retries it: no event is due to bring the namespace back (its
// informer resyncs twice a day), and without the account no pod can be
// created there.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.RunRetryingForever(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.nsLister.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	if _, err := c.saLister.ServiceAccounts(namespace).Get(DefaultName); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace}}
	_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		return fmt.Errorf("create default serviceaccount in %s: %w", namespace, err)
	}
}
