package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/skiffkube/skiff/apiserver/qos"
	"github.com/skiffkube/skiff/storage"
)

// quotaAttempts bounds the compare-and-swap retries of one charge.
const quotaAttempts = 20

// computeResources are the pod resources a quota can make mandatory: a
// quota on limits.cpu refuses pods whose containers set no cpu limit.
var computeResources = []corev1.ResourceName{
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	corev1.ResourceCPU, corev1.ResourceMemory,
}

type storedQuota struct {
	key string
	rev int64
	q   *corev1.ResourceQuota
}

// chargeQuota checks the object against every ResourceQuota of its
// namespace and adds its usage to their status.used, each with a
// compare-and-swap on the quota, so two requests racing for the last unit
// cannot both win. undo takes the charge back when the write then fails.
func (c *Chain) chargeQuota(ctx context.Context, a *Attributes) (undo func(), err error) {
	if a.Namespace == "" || QuotaIgnores(a.Resource) {
		return nil, nil
	}
	return c.charge(ctx, a, func() corev1.ResourceList { return Usage(a.Resource, a.Object) })
}

// chargeUpdate charges what an update adds to an object's usage, as
// Kubernetes' quota admission evaluates updates of claims (a larger storage
// request) and of services (a type that needs node ports or a load
// balancer, more node ports); an update that adds nothing is not checked.
func (c *Chain) chargeUpdate(ctx context.Context, a *Attributes, old runtime.Object) (undo func(), err error) {
	if (a.Resource != claimsResource && a.Resource != servicesResource) || a.Subresource != "" || a.Namespace == "" {
		return nil, nil
	}
	prev := Usage(a.Resource, old)
	delta := corev1.ResourceList{}
	for name, v := range Usage(a.Resource, a.Object) {
		d := v.DeepCopy()
		if p, ok := prev[name]; ok {
			d.Sub(p)
		}
		if d.Sign() > 0 {
			delta[name] = d
		}
	}
	if len(delta) == 0 {
		return nil, nil
	}
	return c.charge(ctx, a, func() corev1.ResourceList { return delta })
}

// charge checks what usage computes against the namespace's quotas and
// adds it to their usage. usage runs only when the namespace has quotas:
// most have none, and summing a pod's requests and limits was most of
// what quota admission allocated per pod.
func (c *Chain) charge(ctx context.Context, a *Attributes, usage func() corev1.ResourceList) (undo func(), err error) {
	var delta corev1.ResourceList
	for attempt := 0; attempt < quotaAttempts; attempt++ {
		quotas, err := c.quotas(ctx, a.Namespace, attempt == 0)
		if err != nil || len(quotas) == 0 {
			return nil, err
		}
		if delta == nil {
			// What the request uses none of it does not consume: a
			// quota already past its limit on such a resource (its hard
			// value lowered below what is in use) does not refuse it, as
			// Kubernetes drops zero usage before comparing.
			delta = nonZero(usage())
		}
		type charge struct {
			sq   storedQuota
			used corev1.ResourceList
		}
		var charges []charge
		for _, sq := range quotas {
			if !QuotaMatches(sq.q, a.Object) {
				continue
			}
			relevant := relevantResources(sq.q.Spec.Hard, delta)
			if err := requireCompute(a, sq.q); err != nil {
				return nil, err
			}
			if len(relevant) == 0 {
				continue
			}
			used := sq.q.Status.Used.DeepCopy()
			if used == nil {
				used = corev1.ResourceList{}
			}
			var unknown []string
			for _, name := range relevant {
				if _, ok := used[corev1.ResourceName(name)]; !ok {
					unknown = append(unknown, name)
				}
			}
			if len(unknown) > 0 {
				// The quota controller has not counted these yet (a quota
				// created a moment ago): count them now rather than refuse
				// with Kubernetes' "status unknown for quota".
				now, err := c.usageNow(ctx, a.Namespace, sq.q, unknown)
				if err != nil {
					return nil, err
				}
				for name, v := range now {
					used[name] = v
				}
			}
			sq.q.Status.Used = used.DeepCopy()
			var exceeded []string
			for _, name := range relevant {
				rn := corev1.ResourceName(name)
				next := used[rn].DeepCopy()
				next.Add(delta[rn])
				if hard := sq.q.Spec.Hard[rn]; next.Cmp(hard) > 0 {
					exceeded = append(exceeded, name)
				}
				used[rn] = next
			}
			if len(exceeded) > 0 {
				return nil, forbidden(a, "exceeded quota: %s, requested: %s, used: %s, limited: %s", sq.q.Name,
					format(delta, exceeded), format(sq.q.Status.Used, exceeded), format(sq.q.Spec.Hard, exceeded))
			}
			charges = append(charges, charge{sq, used})
		}
		if a.DryRun || len(charges) == 0 {
			return nil, nil
		}
		var done []storedQuota
		conflict := false
		for _, ch := range charges {
			written, err := c.writeUsed(ctx, ch.sq, ch.used)
			if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
				conflict = true
				break
			}
			if err != nil {
				c.release(ctx, done, delta)
				return nil, apierrors.NewInternalError(err)
			}
			done = append(done, written)
		}
		if !conflict {
			return func() { c.release(context.WithoutCancel(ctx), done, delta) }, nil
		}
		c.release(ctx, done, delta)
	}
	return nil, apierrors.NewConflict(a.Resource, a.Name, fmt.Errorf("resource quotas of namespace %s kept changing; try again", a.Namespace))
}

// quotas reads a namespace's ResourceQuotas. With cached set it reads the
// store's list cache as it is, without first reading the
// database's newest revision (a query per create, most of them in
// namespaces with no quota). On this server the cache holds every write
// already answered; on another server of a PostgreSQL cluster it may trail
// by the moment a notification takes, as Kubernetes' quota admission reads
// an informer. A stale quota is caught by the compare-and-swap of its
// usage, and the retry then reads the newest revision.
func (c *Chain) quotas(ctx context.Context, namespace string, cached bool) ([]storedQuota, error) {
	l, err := c.store.List(ctx, storage.ListOptions{Prefix: "/registry/resourcequotas/" + namespace + "/", AnyRevision: cached})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := make([]storedQuota, 0, len(l.KVs))
	for _, kv := range l.KVs {
		q := &corev1.ResourceQuota{}
		if err := json.Unmarshal(kv.Value, q); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("decoding %s: %w", kv.Key, err))
		}
		out = append(out, storedQuota{kv.Key, kv.ModRevision, q})
	}
	return out, nil
}

// writeUsed stores a quota with new status.used if it is unchanged since it
// was read.
func (c *Chain) writeUsed(ctx context.Context, sq storedQuota, used corev1.ResourceList) (storedQuota, error) {
	q := sq.q.DeepCopy()
	q.Status.Used = used
	if q.Status.Hard == nil {
		q.Status.Hard = q.Spec.Hard.DeepCopy()
	}
	q.ResourceVersion = ""
	data, err := json.Marshal(q)
	if err != nil {
		return sq, err
	}
	kv, err := c.store.Update(ctx, sq.key, data, sq.rev, 0)
	if err != nil {
		return sq, err
	}
	return storedQuota{sq.key, kv.ModRevision, q}, nil
}

// release subtracts delta from the quotas charged, re-reading on conflict.
// It is best effort: the quota controller recalculates usage anyway.
func (c *Chain) release(ctx context.Context, charged []storedQuota, delta corev1.ResourceList) {
	for _, sq := range charged {
		for attempt := 0; attempt < quotaAttempts; attempt++ {
			q, kv, found, err := getInto[corev1.ResourceQuota](ctx, c.store, sq.key)
			if err != nil || !found {
				break
			}
			used := q.Status.Used.DeepCopy()
			for name := range used {
				if d, ok := delta[name]; ok {
					v := used[name]
					v.Sub(d)
					if v.Sign() < 0 {
						v = resource.Quantity{}
					}
					used[name] = v
				}
			}
			if _, err := c.writeUsed(ctx, storedQuota{sq.key, kv.ModRevision, q}, used); !errors.Is(err, storage.ErrConflict) {
				if err != nil {
					c.log.Warn("releasing quota charge failed; the quota controller will correct it", "quota", sq.key, "err", err)
				}
				break
			}
		}
	}
}

// nonZero is list without its zero quantities.
func nonZero(list corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(list))
	for name, v := range list {
		if !v.IsZero() {
			out[name] = v
		}
	}
	return out
}

// relevantResources are the resources a quota limits that the object uses,
// sorted.
func relevantResources(hard, delta corev1.ResourceList) []string {
	var out []string
	for name := range hard {
		if _, ok := delta[name]; ok {
			out = append(out, string(name))
		}
	}
	sort.Strings(out)
	return out
}

// requireCompute refuses a pod whose containers leave out a compute
// resource the quota limits. As Kubernetes words it, the message lists the
// missing resources in name order, each with the names of the containers
// (init containers too) that leave it out, sorted.
func requireCompute(a *Attributes, q *corev1.ResourceQuota) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	missing := map[corev1.ResourceName]map[string]bool{}
	for _, name := range computeResources {
		if _, limited := q.Spec.Hard[name]; !limited {
			continue
		}
		isLimit := strings.HasPrefix(string(name), "limits.")
		base := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(string(name), "limits."), "requests."))
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for _, ctr := range list {
				set := ctr.Resources.Requests
				if isLimit {
					set = ctr.Resources.Limits
				}
				if _, ok := set[base]; !ok {
					if missing[name] == nil {
						missing[name] = map[string]bool{}
					}
					missing[name][ctr.Name] = true
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for name := range missing {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		ctrs := make([]string, 0, len(missing[corev1.ResourceName(name)]))
		for c := range missing[corev1.ResourceName(name)] {
			ctrs = append(ctrs, c)
		}
		sort.Strings(ctrs)
		parts = append(parts, fmt.Sprintf("%s for: %s", name, strings.Join(ctrs, ",")))
	}
	return forbidden(a, "failed quota: %s: must specify %s", q.Name, strings.Join(parts, "; "))
}

// format renders "name=quantity,…" for the given names.
func format(list corev1.ResourceList, names []string) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := list[corev1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// QuotaMatches applies the quota's scopes to a pod (other objects match
// only unscoped quotas).
func QuotaMatches(q *corev1.ResourceQuota, obj runtime.Object) bool {
	scopes := append([]corev1.ResourceQuotaScope{}, q.Spec.Scopes...)
	var selectors []corev1.ScopedResourceSelectorRequirement
	if q.Spec.ScopeSelector != nil {
		selectors = q.Spec.ScopeSelector.MatchExpressions
	}
	if len(scopes) == 0 && len(selectors) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, s := range scopes {
		selectors = append(selectors, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	for _, sel := range selectors {
		if !scopeMatches(sel, pod) {
			return false
		}
	}
	return true
}

func scopeMatches(sel corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		op := map[corev1.ScopeSelectorOperator]selection.Operator{
			corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
			corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
		}[sel.Operator]
		req, err := labels.NewRequirement("priorityClass", op, sel.Values)
		if err != nil {
			return false
		}
		set := labels.Set{}
		if pod.Spec.PriorityClassName != "" {
			set["priorityClass"] = pod.Spec.PriorityClassName
		}
		return req.Matches(set)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return false
}

// crossNamespaceAffinity tells whether a pod's affinity or anti-affinity
// has a term reaching outside its own namespace (a namespace list or a
// namespace selector), which a CrossNamespacePodAffinity quota scope
// selects, as Kubernetes does.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	aff := pod.Spec.Affinity
	if aff == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a := aff.PodAffinity; a != nil {
		terms = append(terms, a.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a := aff.PodAntiAffinity; a != nil {
		terms = append(terms, a.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// isBestEffort: a quota's BestEffort scope selects pods by their QoS
// class, which only CPU and memory decide.
func isBestEffort(pod *corev1.Pod) bool { return qos.Of(pod) == corev1.PodQOSBestEffort }

// usageNow counts, from the store, what the namespace's objects use of the
// named quota resources.
func (c *Chain) usageNow(ctx context.Context, namespace string, q *corev1.ResourceQuota, names []string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, name := range names {
		out[corev1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	sum := func(gr schema.GroupResource, obj runtime.Object) {
		if !QuotaMatches(q, obj) {
			return
		}
		for n, v := range Usage(gr, obj) {
			if cur, ok := out[n]; ok {
				cur.Add(v)
				out[n] = cur
			}
		}
	}
	pods, _, err := listInto[corev1.Pod](ctx, c.store, "/registry/pods/"+namespace+"/", true)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		sum(podsResource, p) // Usage leaves out what finished pods no longer hold
	}
	services, _, err := listInto[corev1.Service](ctx, c.store, "/registry/services/"+namespace+"/", true)
	if err != nil {
		return nil, err
	}
	for _, svc := range services {
		sum(servicesResource, svc)
	}
	for _, name := range names {
		if !IsClaimResource(corev1.ResourceName(name)) {
			continue
		}
		claims, _, err := listInto[corev1.PersistentVolumeClaim](ctx, c.store, "/registry/persistentvolumeclaims/"+namespace+"/", true)
		if err != nil {
			return nil, err
		}
		for _, pvc := range claims {
			sum(claimsResource, pvc)
		}
		break
	}
	// Other object counts: the number of keys under the resource's prefix.
	for _, name := range names {
		gr, ok := CountedName(corev1.ResourceName(name))
		if !ok || gr.Resource == "pods" || gr.Resource == "services" || gr.Resource == "persistentvolumeclaims" {
			continue
		}
		prefix := "/registry/" + gr.Resource + "/" + namespace + "/"
		if gr.Group != "" {
			prefix = "/registry/" + gr.Group + "/" + gr.Resource + "/" + namespace + "/"
		}
		l, err := c.store.List(ctx, storage.ListOptions{Prefix: prefix})
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out[corev1.ResourceName(name)] = *resource.NewQuantity(int64(len(l.KVs)), resource.DecimalSI)
	}
	return out, nil
}

// CountedName maps an object-count quota name — count/<resource>[.<group>]
// or a legacy one such as "configmaps" — to its group/resource.
func CountedName(name corev1.ResourceName) (schema.GroupResource, bool) {
	switch name {
	case corev1.ResourceConfigMaps, corev1.ResourceSecrets, corev1.ResourceReplicationControllers,
		corev1.ResourceQuotas, corev1.ResourcePersistentVolumeClaims:
		return schema.GroupResource{Resource: string(name)}, true
	}
	s, ok := strings.CutPrefix(string(name), "count/")
	if !ok || s == "" {
		return schema.GroupResource{}, false
	}
	r, g, _ := strings.Cut(s, ".")
	return schema.GroupResource{Group: g, Resource: r}, true
}
