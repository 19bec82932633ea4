package endpointslicemirroring

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

// errStale means the slice cache lags this controller's own writes; the key is retried with backoff.
var errStale = errors.New("endpointslice cache is older than the mirroring controller's last write")

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ep, err := c.epLister.Endpoints(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteMirrored(ctx, key, namespace, name)
	}
	if err != nil {
		return err
	}
	if !shouldMirror(ep) {
		return c.deleteMirrored(ctx, key, namespace, name)
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteMirrored(ctx, key, namespace, name)
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector != nil {
		// The EndpointSlice controller publishes the slices of a Service with a selector.
		return c.deleteMirrored(ctx, key, namespace, name)
	}
	existing, err := c.mirroredSlices(namespace, name)
	if err != nil {
		return err
	}
	if c.tracker.stale(key, existing) {
		return errStale
	}
	return c.reconcile(ctx, ep, existing)
}

// mirroredSlices are the slices this controller made for the Endpoints namespace/name, by name.
func (c *Controller) mirroredSlices(namespace, name string) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName})
	list, err := c.sliceLister.EndpointSlices(namespace).List(sel)
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// deleteMirrored deletes every slice mirrored for namespace/name.
func (c *Controller) deleteMirrored(ctx context.Context, key, namespace, name string) error {
	slices, err := c.mirroredSlices(namespace, name)
	if err != nil {
		return err
	}
	c.tracker.forget(key)
	var errs []error
	for _, s := range slices {
		if err := c.deleteSlice(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) deleteSlice(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete endpointslice %s/%s: %w", s.Namespace, s.Name, err)
	}
	if err == nil {
		c.tracker.expectDeletion(s)
	}
	return nil
}

// group is what one slice mirrors: endpoints of one address family sharing one list of ports.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   map[endpointKey]discoveryv1.Endpoint
}

// endpointKey tells endpoints apart: two addresses are one when IP and target agree, as in the
// repacking of Endpoints subsets.
type endpointKey struct {
	ip  string
	uid string
}

func keyOf(e discoveryv1.Endpoint) endpointKey {
	k := endpointKey{}
	if len(e.Addresses) > 0 {
		k.ip = e.Addresses[0]
	}
	if e.TargetRef != nil {
		k.uid = string(e.TargetRef.UID)
	}
	return k
}

// desired computes the groups an Endpoints object mirrors to, keyed by groupKey; groups of a
// subset's ports with no address of a family are present and empty, so that their slices go.
// It also counts the addresses left out: invalid IPs, and those over the per-subset limit.
func (c *Controller) desired(ep *corev1.Endpoints) (groups map[string]*group, invalid, skipped int) {
	groups = map[string]*group{}
	for _, ss := range repackSubsets(ep.Subsets) {
		ports := slicePorts(ss.Ports)
		byType := map[discoveryv1.AddressType]*group{}
		for _, at := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			k := groupKey(at, ports)
			g, ok := groups[k]
			if !ok {
				g = &group{addressType: at, ports: ports, endpoints: map[endpointKey]discoveryv1.Endpoint{}}
				groups[k] = g
			}
			byType[at] = g
		}
		added := 0
		add := func(addrs []corev1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				if added >= c.maxPer {
					return
				}
				e, at, ok := toEndpoint(a, ready)
				if !ok {
					invalid++
					continue
				}
				byType[at].endpoints[keyOf(e)] = e
				added++
			}
		}
		add(ss.Addresses, true)
		add(ss.NotReadyAddresses, false)
		skipped += len(ss.Addresses) + len(ss.NotReadyAddresses) - added
	}
	return groups, invalid, skipped
}

// reconcile brings the mirrored slices of ep to what it lists: per group, the first existing slice
// is updated when it differs, the others are deleted; a group without a slice gets one (reusing, by
// update, a slice of the same family that is going anyway).
func (c *Controller) reconcile(ctx context.Context, ep *corev1.Endpoints, existing []*discoveryv1.EndpointSlice) error {
	groups, invalid, skipped := c.desired(ep)
	if invalid > 0 {
		c.recorder.Eventf(ep, corev1.EventTypeWarning, InvalidIPAddress,
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", invalid)
	}
	if skipped > invalid {
		c.log.Warn("addresses over the per-subset limit not mirrored", "controller", Name,
			"endpoints", ep.Namespace+"/"+ep.Name, "skipped", skipped, "max", c.maxPer)
		c.recorder.Eventf(ep, corev1.EventTypeWarning, TooManyAddressesToMirror,
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", c.maxPer, skipped)
	}

	existingByKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := groupKey(s.AddressType, s.Ports)
		existingByKey[k] = append(existingByKey[k], s)
	}
	meta := c.sliceMeta(ep)
	var toCreate, toUpdate, toDelete []*discoveryv1.EndpointSlice
	for _, k := range sortedKeys(groups) {
		g := groups[k]
		have := existingByKey[k]
		if len(g.endpoints) == 0 {
			toDelete = append(toDelete, have...)
			continue
		}
		want := meta(g)
		if len(have) == 0 {
			toCreate = append(toCreate, want)
			continue
		}
		toDelete = append(toDelete, have[1:]...)
		if !sameSlice(have[0], want) {
			toUpdate = append(toUpdate, replaced(have[0], want))
		}
	}
	for _, k := range sortedKeys(existingByKey) {
		if _, ok := groups[k]; !ok {
			toDelete = append(toDelete, existingByKey[k]...)
		}
	}
	// A slice about to be deleted takes the place of one to create, if of the same family
	// (addressType cannot change).
	for i := 0; i < len(toCreate); i++ {
		for j, d := range toDelete {
			if d.AddressType == toCreate[i].AddressType {
				toUpdate = append(toUpdate, replaced(d, toCreate[i]))
				toCreate = append(toCreate[:i], toCreate[i+1:]...)
				toDelete = append(toDelete[:j], toDelete[j+1:]...)
				i--
				break
			}
		}
	}

	client := c.client.DiscoveryV1().EndpointSlices(ep.Namespace)
	if ep.DeletionTimestamp == nil {
		for _, s := range toCreate {
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("create endpointslice for endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
			}
			c.tracker.wrote(created)
		}
	}
	for _, s := range toUpdate {
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", s.Namespace, s.Name, err)
		}
		c.tracker.wrote(updated)
	}
	for _, s := range toDelete {
		if err := c.deleteSlice(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// sliceMeta returns a builder of new slices for ep: its labels with service-name and managed-by
// set, its annotations but the trigger time and kubectl's last applied configuration, and ep as
// controlling owner.
func (c *Controller) sliceMeta(ep *corev1.Endpoints) func(g *group) *discoveryv1.EndpointSlice {
	lbls := maps.Clone(ep.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[discoveryv1.LabelServiceName] = ep.Name
	lbls[discoveryv1.LabelManagedBy] = ControllerName
	annotations := map[string]string{}
	for k, v := range ep.Annotations {
		if k != corev1.EndpointsLastChangeTriggerTime && k != corev1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	yes := true
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Endpoints", Name: ep.Name, UID: ep.UID, Controller: &yes, BlockOwnerDeletion: &yes}
	prefix := ep.Name + "-"
	if len(prefix) > 253 {
		prefix = ep.Name
	}
	return func(g *group) *discoveryv1.EndpointSlice {
		eps := make([]discoveryv1.Endpoint, 0, len(g.endpoints))
		for _, e := range g.endpoints {
			eps = append(eps, e)
		}
		sort.Slice(eps, func(i, j int) bool {
			a, b := keyOf(eps[i]), keyOf(eps[j])
			return a.ip < b.ip || (a.ip == b.ip && a.uid < b.uid)
		})
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName:    prefix,
				Namespace:       ep.Namespace,
				Labels:          maps.Clone(lbls),
				Annotations:     maps.Clone(annotations),
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			AddressType: g.addressType,
			Ports:       g.ports,
			Endpoints:   eps,
		}
	}
}

// replaced is have with want's labels, annotations, owner and content.
func replaced(have, want *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	next := have.DeepCopy()
	next.Labels, next.Annotations, next.OwnerReferences = want.Labels, want.Annotations, want.OwnerReferences
	next.Ports, next.Endpoints = want.Ports, want.Endpoints
	return next
}

// sameSlice compares what a mirrored slice carries; the endpoints as a set.
func sameSlice(have, want *discoveryv1.EndpointSlice) bool {
	if !apiequality.Semantic.DeepEqual(have.Labels, want.Labels) ||
		!apiequality.Semantic.DeepEqual(have.Annotations, want.Annotations) ||
		!apiequality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) ||
		len(have.Endpoints) != len(want.Endpoints) {
		return false
	}
	wanted := make(map[endpointKey]discoveryv1.Endpoint, len(want.Endpoints))
	for _, e := range want.Endpoints {
		wanted[keyOf(e)] = e
	}
	for _, e := range have.Endpoints {
		w, ok := wanted[keyOf(e)]
		if !ok || !apiequality.Semantic.DeepEqual(e, w) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
