package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "resourcequota-controller"

// DefaultResync is how often every quota is recomputed even without events (object counts have no
// informer).
const DefaultResync = 30 * time.Second

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
	Resync time.Duration
}

// Controller keeps ResourceQuota status.
type Controller struct {
	client      kubernetes.Interface
	md          metadata.Interface
	mapper      *restmapper.DeferredDiscoveryRESTMapper
	quotaLister corelisters.ResourceQuotaLister
	podLister   corelisters.PodLister
	svcLister   corelisters.ServiceLister
	synced      []cache.InformerSynced
	queue       runner.Queue
	recorder    record.EventRecorder
	log         *slog.Logger
	resync      time.Duration
}

// New wires the controller. md counts objects of any resource; disc maps count/<resource>.<group>
// to a served version.
func New(client kubernetes.Interface, disc discovery.DiscoveryInterface, md metadata.Interface, quotas coreinformers.ResourceQuotaInformer,
	pods coreinformers.PodInformer, services coreinformers.ServiceInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || disc == nil || md == nil || quotas == nil || pods == nil || services == nil || recorder == nil {
		return nil, fmt.Errorf("resourcequota: clients, informers and recorder are required")
	}
	c := &Controller{
		client: client, md: md, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		quotaLister: quotas.Lister(), podLister: pods.Lister(), svcLister: services.Lister(),
		synced:   []cache.InformerSynced{quotas.Informer().HasSynced, pods.Informer().HasSynced, services.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		recorder: recorder, log: opts.Logger, resync: opts.Resync,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.resync <= 0 {
		c.resync = DefaultResync
	}
	if _, err := quotas.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{pods.Informer(), services.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.namespaceChanged, UpdateFunc: func(_, cur any) { c.namespaceChanged(cur) }, DeleteFunc: c.namespaceChanged,
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes quotas with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

func (c *Controller) namespaceChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	quotas, err := c.quotaLister.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.enqueue(q)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.quotaLister.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	q := cached.DeepCopy()
	used, err := c.usage(ctx, q)
	if err != nil {
		return err
	}
	st := corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: used}
	defer c.queue.AddAfter(key, c.resync)
	if apiequality.Semantic.DeepEqual(q.Status, st) {
		return nil
	}
	q.Status = st
	if _, err := c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update status of resourcequota %s: %w", key, err)
	}
	return nil
}

// usage measures every resource the quota limits.
func (c *Controller) usage(ctx context.Context, q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	pods, err := c.podLister.Pods(q.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var inScope []*corev1.Pod
	for _, p := range pods {
		if !podstate.IsTerminal(p) && matchesScopes(q, p) {
			inScope = append(inScope, p)
		}
	}
	used := corev1.ResourceList{}
	for res := range q.Spec.Hard {
		switch {
		case res == corev1.ResourcePods || res == "count/pods":
			used[res] = *resource.NewQuantity(int64(len(inScope)), resource.DecimalSI)
		case isComputeResource(res):
			used[res] = computeUsage(inScope, res)
		case res == corev1.ResourceServices || res == "count/services" || res == corev1.ResourceServicesNodePorts || res == corev1.ResourceServicesLoadBalancers:
			q, err := c.serviceUsage(q.Namespace, res)
			if err != nil {
				return nil, err
			}
			used[res] = q
		default:
			gr, ok := countedResource(res)
			if !ok {
				continue // not a resource this controller measures
			}
			n, err := c.count(ctx, q.Namespace, gr)
			if err != nil {
				c.log.Debug("cannot count quota resource", "quota", q.Namespace+"/"+q.Name, "resource", res, "err", err)
				continue
			}
			used[res] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	return used, nil
}

// matchesScopes applies the pod scopes Terminating, NotTerminating, BestEffort and NotBestEffort.
func matchesScopes(q *corev1.ResourceQuota, p *corev1.Pod) bool {
	bestEffort := isBestEffort(p)
	terminating := p.Spec.ActiveDeadlineSeconds != nil
	for _, s := range q.Spec.Scopes {
		switch s {
		case corev1.ResourceQuotaScopeTerminating:
			if !terminating {
				return false
			}
		case corev1.ResourceQuotaScopeNotTerminating:
			if terminating {
				return false
			}
		case corev1.ResourceQuotaScopeBestEffort:
			if !bestEffort {
				return false
			}
		case corev1.ResourceQuotaScopeNotBestEffort:
			if bestEffort {
				return false
			}
		}
	}
	return true
}

func isBestEffort(p *corev1.Pod) bool {
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return false
		}
	}
	return true
}

func isComputeResource(res corev1.ResourceName) bool {
	switch res {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage:
		return true
	}
	return strings.HasPrefix(string(res), corev1.DefaultResourceRequestsPrefix)
}

// computeUsage sums effective pod requests ("cpu", "requests.cpu", "requests.<extended>") or limits.
func computeUsage(pods []*corev1.Pod, res corev1.ResourceName) resource.Quantity {
	limits := strings.HasPrefix(string(res), "limits.")
	base := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(string(res), "requests."), "limits."))
	total := resource.Quantity{}
	for _, p := range pods {
		var list corev1.ResourceList
		if limits {
			list = resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
		} else {
			list = resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		}
		if v, ok := list[base]; ok {
			total.Add(v)
		}
	}
	if total.Format == "" {
		total = *resource.NewQuantity(0, resource.DecimalSI)
	}
	return total
}

func (c *Controller) serviceUsage(ns string, res corev1.ResourceName) (resource.Quantity, error) {
	svcs, err := c.svcLister.Services(ns).List(labels.Everything())
	if err != nil {
		return resource.Quantity{}, err
	}
	var n int64
	for _, s := range svcs {
		switch res {
		case corev1.ResourceServicesNodePorts:
			// Every port of a NodePort service, and of a LoadBalancer unless it allocates none.
			lbWithPorts := s.Spec.Type == corev1.ServiceTypeLoadBalancer &&
				(s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts)
			if s.Spec.Type == corev1.ServiceTypeNodePort || lbWithPorts {
				n += int64(len(s.Spec.Ports))
			}
		case corev1.ResourceServicesLoadBalancers:
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				n++
			}
		default:
			n++
		}
	}
	return *resource.NewQuantity(n, resource.DecimalSI), nil
}

// countedResource maps an object-count quota name to a group/resource: the legacy names
// (configmaps, secrets, …) and count/<resource>[.<group>].
func countedResource(res corev1.ResourceName) (schema.GroupResource, bool) {
	switch res {
	case corev1.ResourceConfigMaps, corev1.ResourceSecrets, corev1.ResourceReplicationControllers,
		corev1.ResourceQuotas, corev1.ResourcePersistentVolumeClaims:
		return schema.GroupResource{Resource: string(res)}, true
	}
	s, ok := strings.CutPrefix(string(res), "count/")
	if !ok || s == "" {
		return schema.GroupResource{}, false
	}
	r, g, _ := strings.Cut(s, ".")
	return schema.GroupResource{Group: g, Resource: r}, true
}

// count lists a resource's objects in ns through the metadata client.
func (c *Controller) count(ctx context.Context, ns string, gr schema.GroupResource) (int64, error) {
	gvr, err := c.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		c.mapper.Reset() // maybe a CRD discovery has not seen yet
		return 0, err
	}
	list, err := c.md.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return int64(len(list.Items)), nil
}
