package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// errStale means the cache lags our own writes; the key is retried with backoff.
var errStale = errors.New("endpointslice cache is older than our last write")

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.ownedSlices(namespace, name)
	if err != nil {
		return err
	}
	if !c.exp.Satisfied(key) {
		return nil // an event for the slices we wrote will requeue the key
	}
	if err := c.checkFresh(existing); err != nil {
		return err
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The garbage collector would remove them through ownerReferences; removing them here keeps
		// traffic from going to a deleted Service's pods in the meantime.
		return c.deleteSlices(ctx, key, existing)
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
		// Without a selector the user manages endpoints; ExternalName has none.
		return c.deleteSlices(ctx, key, existing)
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	desired := c.desiredSlices(svc, desiredGroups(svc, pods))
	return c.reconcile(ctx, key, svc, desired, existing)
}

func (c *Controller) ownedSlices(namespace, service string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: ControllerName})
	list, err := c.sliceLister.EndpointSlices(namespace).List(sel)
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

func (c *Controller) checkFresh(slices []*discoveryv1.EndpointSlice) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range slices {
		if g, ok := c.written[s.UID]; ok && s.Generation < g {
			return errStale
		}
	}
	return nil
}

func (c *Controller) remember(s *discoveryv1.EndpointSlice) {
	c.mu.Lock()
	c.written[s.UID] = s.Generation
	c.mu.Unlock()
}

// desiredSlices chunks each port group into slices of at most maxPer endpoints.
func (c *Controller) desiredSlices(svc *corev1.Service, groups []group) []*discoveryv1.EndpointSlice {
	lbls := map[string]string{}
	maps.Copy(lbls, svc.Labels)
	lbls[discoveryv1.LabelServiceName] = svc.Name
	lbls[discoveryv1.LabelManagedBy] = ControllerName
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		lbls[corev1.IsHeadlessService] = ""
	} else {
		delete(lbls, corev1.IsHeadlessService)
	}
	mk := func(ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName:    svc.Name + "-",
				Namespace:       svc.Namespace,
				Labels:          maps.Clone(lbls),
				OwnerReferences: []metav1.OwnerReference{metaOwner(svc)},
			},
			AddressType: addressType(svc),
			Endpoints:   eps,
			Ports:       ports,
		}
	}
	var out []*discoveryv1.EndpointSlice
	for _, g := range groups {
		for i := 0; i < len(g.endpoints); i += c.maxPer {
			out = append(out, mk(g.ports, g.endpoints[i:min(i+c.maxPer, len(g.endpoints))]))
		}
	}
	if len(out) == 0 {
		// An empty placeholder slice says "this Service has no endpoints" rather than "not processed yet";
		// like Kubernetes', it carries no ports.
		ports := []discoveryv1.EndpointPort{}
		out = append(out, mk(ports, []discoveryv1.Endpoint{}))
	}
	return out
}

// reconcile pairs desired slices with existing ones in order, updating those that differ, creating
// the missing and deleting the surplus.
func (c *Controller) reconcile(ctx context.Context, key string, svc *corev1.Service, desired, existing []*discoveryv1.EndpointSlice) error {
	client := c.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	var toCreate []*discoveryv1.EndpointSlice
	var surplus []*discoveryv1.EndpointSlice
	for i, want := range desired {
		if i >= len(existing) {
			toCreate = append(toCreate, want)
			continue
		}
		have := existing[i]
		if have.AddressType != want.AddressType {
			// addressType is immutable: replace the slice.
			surplus = append(surplus, have)
			toCreate = append(toCreate, want)
			continue
		}
		if sameContent(have, want) {
			continue
		}
		next := have.DeepCopy()
		next.Labels, next.OwnerReferences = want.Labels, want.OwnerReferences
		next.Endpoints, next.Ports = want.Endpoints, want.Ports
		updated, err := client.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", have.Namespace, have.Name, err)
		}
		c.remember(updated)
	}
	if len(existing) > len(desired) {
		surplus = append(surplus, existing[len(desired):]...)
	}
	if svc.DeletionTimestamp != nil {
		// As Kubernetes: nothing new for a Service being deleted, or the garbage collector deleting its
		// slices (foreground deletion waits for them) would race with us replacing them.
		toCreate = nil
	}
	if len(toCreate) > 0 {
		c.exp.ExpectCreations(key, len(toCreate))
		for i, s := range toCreate {
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				for range toCreate[i:] {
					c.exp.CreationObserved(key)
				}
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToCreateEndpointSlice", "Error creating EndpointSlice for Service %s/%s: %v", svc.Namespace, svc.Name, err)
				return fmt.Errorf("create endpointslice for %s: %w", key, err)
			}
			c.remember(created)
		}
	}
	return c.deleteSlices(ctx, key, surplus)
}

func (c *Controller) deleteSlices(ctx context.Context, key string, slices []*discoveryv1.EndpointSlice) error {
	if len(slices) == 0 {
		return nil
	}
	keys := make([]string, len(slices))
	for i, s := range slices {
		keys[i] = s.Namespace + "/" + s.Name
	}
	c.exp.ExpectDeletions(key, keys)
	for i, s := range slices {
		err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			for _, k := range keys[i:] {
				c.exp.DeletionObserved(key, k)
			}
			return fmt.Errorf("delete endpointslice %s: %w", keys[i], err)
		}
		if apierrors.IsNotFound(err) {
			c.exp.DeletionObserved(key, keys[i])
		}
	}
	return nil
}

func sameContent(have, want *discoveryv1.EndpointSlice) bool {
	return apiequality.Semantic.DeepEqual(have.Endpoints, want.Endpoints) &&
		apiequality.Semantic.DeepEqual(have.Ports, want.Ports) &&
		apiequality.Semantic.DeepEqual(have.Labels, want.Labels) &&
		apiequality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences)
}
