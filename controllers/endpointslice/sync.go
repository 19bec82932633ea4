package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/triggertime"
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
	// As Kubernetes, slices being deleted are left to go: their endpoints are placed anew.
	existing = slices.DeleteFunc(existing, func(s *discoveryv1.EndpointSlice) bool { return s.DeletionTimestamp != nil })
	// The events of our own writes do not queue the Service again, so a cache behind them is an
	// error: the Service is retried with backoff.
	if !c.exp.Satisfied(key) {
		return errStale
	}
	if err := c.checkFresh(existing); err != nil {
		return err
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggers.Forget(key)
		c.topology.forgetService(key)
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
	groups := map[discoveryv1.AddressType][]group{}
	var missing []string
	for _, at := range addressTypes(svc) {
		g, m, err := c.desiredGroups(svc, pods, at)
		if err != nil {
			return err
		}
		groups[at] = g
		for _, pm := range m {
			if !slices.Contains(missing, pm) {
				missing = append(missing, pm)
			}
		}
	}
	// Computed on every sync, even one that writes nothing, so that what it remembers stays current.
	trigger := c.triggers.Compute(key, svc, pods)
	err = c.reconcile(ctx, key, svc, groups, existing, trigger)
	if len(missing) > 0 {
		// The slices are written without those pods; the error retries the Service with backoff.
		err = errors.Join(fmt.Errorf("skipping %s: node not found", strings.Join(missing, ", ")), err)
	}
	if err != nil {
		// As Kubernetes, whatever failed (a write, a missing node) is one warning on the Service.
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return err
	}
	return nil
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
		if g, ok := c.written[s.UID]; ok && (g == deletionExpected || s.Generation < g) {
			return errStale
		}
	}
	return nil
}

func (c *Controller) remember(s *discoveryv1.EndpointSlice) { c.setWritten(s.UID, s.Generation) }

func (c *Controller) setWritten(uid types.UID, g int64) {
	c.mu.Lock()
	c.written[uid] = g
	c.mu.Unlock()
}

func (c *Controller) forgetWritten(uid types.UID) {
	c.mu.Lock()
	delete(c.written, uid)
	c.mu.Unlock()
}

// sliceLabels are the labels of a Service's slices: the Service's own, the service name, managed-by
// and, for a headless Service, the headless label.
func sliceLabels(svc *corev1.Service) map[string]string {
	lbls := map[string]string{}
	maps.Copy(lbls, svc.Labels)
	lbls[discoveryv1.LabelServiceName] = svc.Name
	lbls[discoveryv1.LabelManagedBy] = ControllerName
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		lbls[corev1.IsHeadlessService] = ""
	} else {
		delete(lbls, corev1.IsHeadlessService)
	}
	return lbls
}

// newSlice is an empty slice of svc in family at for the given ports, to be created.
func newSlice(svc *corev1.Service, lbls map[string]string, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	prefix := svc.Name + "-"
	if len(prefix) > 253 {
		prefix = svc.Name
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    prefix,
			Namespace:       svc.Namespace,
			Labels:          maps.Clone(lbls),
			OwnerReferences: []metav1.OwnerReference{metaOwner(svc)},
		},
		AddressType: at,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       ports,
	}
}

// ownedBy reports whether svc (this incarnation of it, by uid) owns the slice.
func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// plan is the writes one sync makes.
type plan struct {
	create, update, remove []*discoveryv1.EndpointSlice
	events                 []hintEvent // recorded on the Service once the slices are written
}

// reconcile brings the Service's slices to the wanted endpoints, groups by address family, while
// moving as few endpoints as possible, as Kubernetes' reconciler does. Each family of the Service is
// planned on its own (planFamily); slices of a family the Service no longer has are deleted.
func (c *Controller) reconcile(ctx context.Context, key string, svc *corev1.Service, groups map[discoveryv1.AddressType][]group, existing []*discoveryv1.EndpointSlice, trigger time.Time) error {
	families := addressTypes(svc)
	lbls := sliceLabels(svc)
	var p plan
	byFamily := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !slices.Contains(families, s.AddressType) {
			c.topology.forget(key, s.AddressType)
			p.remove = append(p.remove, s)
			continue
		}
		byFamily[s.AddressType] = append(byFamily[s.AddressType], s)
	}
	for _, at := range families {
		fp := c.planFamily(key, svc, lbls, at, groups[at], byFamily[at])
		p.create = append(p.create, fp.create...)
		p.update = append(p.update, fp.update...)
		p.remove = append(p.remove, fp.remove...)
		p.events = append(p.events, fp.events...)
	}
	err := c.write(ctx, key, svc, p, trigger)
	for _, e := range p.events {
		c.recorder.Event(svc, e.typ, e.reason, e.message)
	}
	return err
}

// planFamily plans the slices of one address family: existing are the Service's slices of that
// family. An endpoint stays in the slice that holds it (updated there when its conditions change),
// slices left empty are deleted, and new endpoints go first into slices being updated anyway (the
// fullest first), then into the existing slice they fill closest to MaxEndpointsPerSlice, then into
// new slices. Slices of an earlier Service of the same name are deleted; a create paired with a
// delete becomes an update. A family without endpoints keeps one placeholder slice.
func (c *Controller) planFamily(key string, svc *corev1.Service, lbls map[string]string, at discoveryv1.AddressType, groups []group, existing []*discoveryv1.EndpointSlice) plan {
	var p plan
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !ownedBy(s, svc) {
			p.remove = append(p.remove, s)
			continue
		}
		k := portsKey(s.Ports)
		byPorts[k] = append(byPorts[k], s)
	}
	wanted := map[string]bool{}
	for _, g := range groups {
		wanted[g.key] = true
		c.place(&p, svc, lbls, at, g, byPorts[g.key])
	}
	for _, k := range sortedKeys(byPorts) {
		if !wanted[k] {
			p.remove = append(p.remove, byPorts[k]...)
		}
	}
	if len(p.remove) == len(existing) && len(p.create) == 0 {
		// An empty placeholder slice says "this Service has no endpoints" rather than "not processed
		// yet"; like Kubernetes', it carries no ports. One already there is kept.
		placeholder := newSlice(svc, lbls, at, []discoveryv1.EndpointPort{})
		if i := slices.IndexFunc(p.remove, func(s *discoveryv1.EndpointSlice) bool { return isPlaceholder(s, placeholder) }); i >= 0 {
			p.remove = slices.Delete(p.remove, i, i+1)
		} else {
			p.create = append(p.create, placeholder)
		}
	}
	// A slice about to be deleted takes the place of one to create (addressType is immutable, and a
	// slice of an earlier Service of the same name may be on its way out through the garbage collector).
	for len(p.create) > 0 {
		i := slices.IndexFunc(p.remove, func(s *discoveryv1.EndpointSlice) bool { return ownedBy(s, svc) })
		if i < 0 {
			break
		}
		old, want := p.remove[i], p.create[len(p.create)-1]
		p.remove = slices.Delete(p.remove, i, i+1)
		p.create = p.create[:len(p.create)-1]
		next := old.DeepCopy()
		next.Labels, next.OwnerReferences = want.Labels, want.OwnerReferences
		next.Ports, next.Endpoints = want.Ports, want.Endpoints
		p.update = append(p.update, next)
	}
	c.hint(key, svc, at, &p, unchangedSlices(existing, p))
	return p
}

// unchangedSlices are the slices of existing that p neither updates nor deletes.
func unchangedSlices(existing []*discoveryv1.EndpointSlice, p plan) []*discoveryv1.EndpointSlice {
	written := map[string]bool{}
	for _, s := range slices.Concat(p.update, p.remove) {
		written[s.Name] = true
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if !written[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// place plans the slices of one port group: have are the Service's slices with these ports.
func (c *Controller) place(p *plan, svc *corev1.Service, lbls map[string]string, at discoveryv1.AddressType, g group, have []*discoveryv1.EndpointSlice) {
	want := make(map[string]discoveryv1.Endpoint, len(g.endpoints))
	for _, e := range g.endpoints {
		want[endpointKey(&e)] = e
	}
	// 1. Existing slices keep the endpoints still wanted, brought up to date; the others go.
	var toUpdate, unchanged []*discoveryv1.EndpointSlice
	for _, s := range have {
		kept := make([]discoveryv1.Endpoint, 0, len(s.Endpoints))
		changed := false
		for i := range s.Endpoints {
			k := endpointKey(&s.Endpoints[i])
			w, ok := want[k]
			if !ok {
				changed = true
				continue
			}
			delete(want, k)
			kept = append(kept, w)
			if !sameEndpoint(w, s.Endpoints[i]) {
				changed = true
			}
		}
		switch {
		case changed && len(kept) == 0:
			p.remove = append(p.remove, s)
		case changed || !apiequality.Semantic.DeepEqual(s.Labels, lbls):
			next := s.DeepCopy()
			next.Endpoints, next.Labels = kept, maps.Clone(lbls)
			toUpdate = append(toUpdate, next)
		default:
			unchanged = append(unchanged, s)
		}
	}
	rest := make([]discoveryv1.Endpoint, 0, len(want))
	for _, e := range g.endpoints {
		if _, ok := want[endpointKey(&e)]; ok {
			rest = append(rest, e)
		}
	}
	fill := func(s *discoveryv1.EndpointSlice) {
		n := min(c.maxPer-len(s.Endpoints), len(rest))
		if n <= 0 {
			return
		}
		s.Endpoints = append(s.Endpoints, rest[:n]...)
		rest = rest[n:]
	}
	// 2. New endpoints fill the slices written anyway, the fullest first.
	sort.SliceStable(toUpdate, func(i, j int) bool { return len(toUpdate[i].Endpoints) > len(toUpdate[j].Endpoints) })
	for _, s := range toUpdate {
		fill(s)
	}
	// 3. Then the unchanged slice that all the rest fills closest to full, then new slices.
	for len(rest) > 0 {
		var s *discoveryv1.EndpointSlice
		if len(rest) < c.maxPer {
			if i := sliceToFill(unchanged, len(rest), c.maxPer); i >= 0 {
				s = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
				toUpdate = append(toUpdate, s)
			}
		}
		if s == nil {
			s = newSlice(svc, lbls, at, g.ports)
			p.create = append(p.create, s)
		}
		fill(s)
	}
	p.update = append(p.update, toUpdate...)
}

// sameEndpoint compares a wanted endpoint with one in a slice, leaving out the hints, which are
// decided for the whole slice once its endpoints are (see hint), as Kubernetes'
// EndpointsEqualBeyondHash does.
func sameEndpoint(want, have discoveryv1.Endpoint) bool {
	have.Hints = want.Hints
	return apiequality.Semantic.DeepEqual(want, have)
}

// sliceToFill returns the index of the slice that n more endpoints bring closest to max without going
// over, or -1.
func sliceToFill(ss []*discoveryv1.EndpointSlice, n, max int) int {
	best, bestGap := -1, max
	for i, s := range ss {
		if gap := max - n - len(s.Endpoints); gap >= 0 && gap < bestGap {
			best, bestGap = i, gap
		}
	}
	return best
}

// isPlaceholder reports whether s is the placeholder p would be, labels and owner included.
func isPlaceholder(s, p *discoveryv1.EndpointSlice) bool {
	return s.Namespace == p.Namespace && s.AddressType == p.AddressType &&
		len(s.Endpoints) == 0 && len(s.Ports) == 0 &&
		apiequality.Semantic.DeepEqual(s.Labels, p.Labels) &&
		apiequality.Semantic.DeepEqual(s.OwnerReferences, p.OwnerReferences)
}

// write carries out a plan: creates (none for a Service being deleted), updates, then deletes. The
// slices it creates and updates get the trigger time.
func (c *Controller) write(ctx context.Context, key string, svc *corev1.Service, p plan, trigger time.Time) error {
	client := c.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	if svc.DeletionTimestamp != nil {
		// As Kubernetes: nothing new for a Service being deleted, or the garbage collector deleting its
		// slices (foreground deletion waits for them) would race with us replacing them.
		p.create = nil
	}
	if len(p.create) > 0 {
		c.exp.ExpectCreations(key, len(p.create))
		for i, s := range p.create {
			s.Annotations = triggertime.Annotate(s.Annotations, trigger)
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				for range p.create[i:] {
					c.exp.CreationObserved(key)
				}
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("create endpointslice for %s: %w", key, err)
			}
			c.remember(created)
		}
	}
	for _, s := range p.update {
		s.Annotations = triggertime.Annotate(s.Annotations, trigger)
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", s.Namespace, s.Name, err)
		}
		c.remember(updated)
	}
	return c.deleteSlices(ctx, key, p.remove)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
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
		c.setWritten(s.UID, deletionExpected)
		err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			for j, k := range keys[i:] {
				c.exp.DeletionObserved(key, k)
				c.forgetWritten(slices[i+j].UID)
			}
			return fmt.Errorf("delete endpointslice %s: %w", keys[i], err)
		}
		if apierrors.IsNotFound(err) {
			c.exp.DeletionObserved(key, keys[i])
		}
	}
	return nil
}
