package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/podservices"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/runner"
	"github.com/skiffkube/skiff/controllers/triggertime"
)

// Name is the controller's name in logs and the manager.
const Name = "endpoints-controller"

// EventSource is the component its Events come from, as kube-controller-manager
// names it (the From column of `kubectl describe`).
const EventSource = "endpoint-controller"

// MaxAddresses is how many addresses (ready and not ready) an Endpoints object holds at most, as in
// Kubernetes; beyond it the object is truncated and annotated corev1.EndpointsOverCapacity.
const MaxAddresses = 1000

// truncated is the value of the corev1.EndpointsOverCapacity annotation.
const truncated = "truncated"

// Options tune the controller; zero values mean the defaults.
type Options struct {
	Logger *slog.Logger
}

// Controller reconciles Endpoints objects.
type Controller struct {
	client    kubernetes.Interface
	svcLister corelisters.ServiceLister
	podLister corelisters.PodLister
	epLister  corelisters.EndpointsLister
	synced    []cache.InformerSynced
	queue     runner.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	triggers  *triggertime.Tracker

	// stale holds, per Service key, the resourceVersion of the Endpoints object this controller last
	// replaced, as Kubernetes' staleEndpointsTracker: a sync that still finds that version in the cache
	// is retried instead of writing over an object it has already updated.
	mu    sync.Mutex
	stale map[string]string
}

// New wires the controller to the informers. Call it before the informer factory is started.
func New(client kubernetes.Interface, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer, epInformer coreinformers.EndpointsInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || svcInformer == nil || podInformer == nil || epInformer == nil || recorder == nil {
		return nil, fmt.Errorf("endpoints: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, svcLister: svcInformer.Lister(), podLister: podInformer.Lister(), epLister: epInformer.Lister(),
		synced:   []cache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced, epInformer.Informer().HasSynced},
		queue:    runner.NewQueue(Name),
		recorder: recorder,
		log:      opts.Logger,
		triggers: triggertime.New(),
		stale:    map[string]string{},
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue, UpdateFunc: func(_, cur any) { c.enqueue(cur) }, DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.onPod, UpdateFunc: c.onPodUpdate, DeleteFunc: c.onPod,
	}); err != nil {
		return nil, err
	}
	// An Endpoints object deleted behind our back is put back. Edits are not watched, as in Kubernetes:
	// the sync of a key whose Service is gone deletes the Endpoints, and an Endpoints object that a user
	// writes without a Service must survive its edits (only the startup sweep below removes leftovers).
	if _, err := epInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Services with the given number of workers until ctx ends. Once the caches have synced
// it queues every Endpoints object once, so that those left behind by Services deleted while the
// controller was not running are removed.
func (c *Controller) Run(ctx context.Context, workers int) {
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			c.queueLeftovers()
		}
	}()
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

// queueLeftovers queues the key of every Endpoints object, as Kubernetes' checkLeftoverEndpoints: a key
// without a Service has its Endpoints deleted. Objects carrying a leader-election record are skipped
// (older leader election kept its lock in an Endpoints object with no Service).
func (c *Controller) queueLeftovers() {
	eps, err := c.epLister.List(labels.Everything())
	if err != nil {
		c.log.Error("list endpoints; leftover endpoints are not cleaned up", "controller", Name, "err", err)
		return
	}
	for _, ep := range eps {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue
		}
		c.enqueue(ep)
	}
}

func (c *Controller) enqueue(obj any) {
	if key, ok := runner.KeyOf(obj); ok {
		c.queue.Add(key)
	}
}

// onPod queues the Services that select a pod come or gone.
func (c *Controller) onPod(obj any) {
	pod, ok := runner.Object[*corev1.Pod](obj)
	if !ok {
		return
	}
	for _, key := range podservices.Selecting(c.svcLister, pod.Namespace, pod.Labels) {
		c.queue.Add(key)
	}
}

// onPodUpdate queues, as Kubernetes does, only the Services a change of the pod's endpoint or
// membership concerns (podservices.ToUpdate): a container restart or a resync queues nothing.
func (c *Controller) onPodUpdate(old, cur any) {
	prev, ok1 := old.(*corev1.Pod)
	pod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	for _, key := range podservices.ToUpdate(c.svcLister, prev, pod) {
		c.queue.Add(key)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		c.triggers.Forget(key)
		c.setStale(key, "")
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil // an ExternalName Service is a DNS alias, with no endpoints, even if it has a selector
	}
	if svc.Spec.Selector == nil {
		return nil // the user manages this Service's endpoints
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	// Computed on every sync, even one that writes nothing, so that what it remembers stays current.
	trigger := c.triggers.Compute(key, svc, pods)
	subsets, over := Truncate(Subsets(svc, pods), MaxAddresses)
	lbls := maps.Clone(svc.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		lbls[corev1.IsHeadlessService] = ""
	} else {
		delete(lbls, corev1.IsHeadlessService)
	}

	cur, err := c.epLister.Endpoints(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: lbls}, Subsets: subsets}
		ep.Annotations = triggertime.Annotate(nil, trigger)
		if over {
			if ep.Annotations == nil {
				ep.Annotations = map[string]string{}
			}
			ep.Annotations[corev1.EndpointsOverCapacity] = truncated
		}
		if _, err := c.client.CoreV1().Endpoints(namespace).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			c.recorder.Eventf(ep, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s: %v", key, err)
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if c.isStale(key, cur) {
		return fmt.Errorf("endpoints %s: cache still holds resourceVersion %s, already replaced", key, cur.ResourceVersion)
	}
	mark, marked := cur.Annotations[corev1.EndpointsOverCapacity]
	if apiequality.Semantic.DeepEqual(cur.Subsets, subsets) && apiequality.Semantic.DeepEqual(cur.Labels, lbls) &&
		marked == over && (!over || mark == truncated) {
		return nil
	}
	next := cur.DeepCopy()
	next.Subsets, next.Labels = subsets, lbls
	next.Annotations = triggertime.Annotate(next.Annotations, trigger)
	if over {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[corev1.EndpointsOverCapacity] = truncated
	} else {
		delete(next.Annotations, corev1.EndpointsOverCapacity)
	}
	updated, err := c.client.CoreV1().Endpoints(namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Eventf(next, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s: %v", key, err)
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	// An update can leave the object as it was (a webhook, say) and keep its resourceVersion: only a
	// new version makes the cached one stale.
	if updated.ResourceVersion != cur.ResourceVersion {
		c.setStale(key, cur.ResourceVersion)
	}
	return nil
}

// setStale records the resourceVersion of key's Endpoints that this controller replaced; "" forgets.
func (c *Controller) setStale(key, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rv == "" {
		delete(c.stale, key)
		return
	}
	c.stale[key] = rv
}

// isStale reports whether cur is a version of key's Endpoints this controller already replaced.
func (c *Controller) isStale(key string, cur *corev1.Endpoints) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	rv, ok := c.stale[key]
	return ok && rv == cur.ResourceVersion
}

// Subsets computes a Service's Endpoints subsets: pods grouped by their resolved port list, ready
// addresses apart from not-ready ones, everything sorted so equal inputs give equal objects.
// Terminating pods are left out unless the Service publishes not-ready addresses.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	v6 := len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	type group struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	groups := map[string]*group{}
	for _, pod := range pods {
		if podstate.IsTerminal(pod) || (pod.DeletionTimestamp != nil && !svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		ip := addressOf(pod, v6)
		if ip == "" {
			continue
		}
		addr := corev1.EndpointAddress{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if pod.Spec.NodeName != "" {
			n := pod.Spec.NodeName
			addr.NodeName = &n
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			addr.Hostname = pod.Spec.Hostname
		}
		var ports []corev1.EndpointPort
		var k strings.Builder
		for _, sp := range svc.Spec.Ports {
			n, ok := podstate.ResolvePort(pod, sp)
			if !ok {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: proto, AppProtocol: sp.AppProtocol})
			k.WriteString(sp.Name + "/" + string(proto) + "/" + strconv.Itoa(int(n)) + ";")
		}
		if len(ports) == 0 && len(svc.Spec.Ports) > 0 {
			continue // the pod serves none of the Service's ports
		}
		g, ok := groups[k.String()]
		if !ok {
			g = &group{ports: ports}
			groups[k.String()] = g
		}
		if podstate.IsReady(pod) && pod.DeletionTimestamp == nil || svc.Spec.PublishNotReadyAddresses {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := []corev1.EndpointSubset{}
	for _, k := range keys {
		g := groups[k]
		sortAddrs(g.ready)
		sortAddrs(g.notReady)
		sort.Slice(g.ports, func(i, j int) bool { return g.ports[i].Name < g.ports[j].Name })
		out = append(out, corev1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Truncate keeps at most limit addresses in subsets and reports whether it dropped any. Ready addresses
// are kept before not-ready ones: with more ready addresses than limit, every not-ready one goes and the
// ready ones are cut down; otherwise all ready ones stay and the not-ready ones fill what is left. What
// is kept of a kind is shared among the subsets in proportion to their share of that kind (rounded up,
// earlier subsets first), keeping the first addresses of each subset; a subset left with no address
// is dropped (the API server rejects one). subsets is not modified.
func Truncate(subsets []corev1.EndpointSubset, limit int) ([]corev1.EndpointSubset, bool) {
	var ready, notReady int
	for _, s := range subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= limit {
		return subsets, false
	}
	cutReady := ready > limit
	room, total := limit-ready, notReady
	if cutReady {
		room, total = limit, ready
	}
	left := room
	out := make([]corev1.EndpointSubset, 0, len(subsets))
	for _, s := range subsets {
		n := len(s.NotReadyAddresses)
		if cutReady {
			n = len(s.Addresses)
		}
		keep := min((n*room+total-1)/total, left, n)
		left -= keep
		t := corev1.EndpointSubset{Addresses: s.Addresses, Ports: s.Ports}
		if cutReady {
			t.Addresses = s.Addresses[:keep:keep]
		} else if keep > 0 {
			t.NotReadyAddresses = s.NotReadyAddresses[:keep:keep]
		}
		if len(t.Addresses)+len(t.NotReadyAddresses) > 0 {
			out = append(out, t)
		}
	}
	return out, true
}

func sortAddrs(a []corev1.EndpointAddress) {
	sort.Slice(a, func(i, j int) bool { return a[i].IP < a[j].IP })
}

func addressOf(pod *corev1.Pod, v6 bool) string {
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, s := range ips {
		if ip := net.ParseIP(s); ip != nil && (ip.To4() == nil) == v6 {
			return s
		}
	}
	return ""
}
