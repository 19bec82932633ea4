package podtopologyspread

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// systemDefaults are kube-scheduler's default constraints (the "System"
// defaulting of PodTopologySpreadArgs) for a pod that sets none: spread the
// pods of its Services and controller over nodes, and more loosely over
// zones. They only score, never filter.
var systemDefaults = []constraint{
	{key: v1.LabelHostname, maxSkew: 3, minDomains: 1, honorAff: true},
	{key: v1.LabelTopologyZone, maxSkew: 5, minDomains: 1, honorAff: true},
}

var (
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// ownerListers find what a pod belongs to, for the default constraints' selector.
type ownerListers struct {
	services     corelisters.ServiceLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

// defaultConstraints returns systemDefaults selecting the pod's siblings, or
// nil when the pod belongs to no Service, ReplicaSet or StatefulSet (there is
// nothing to spread it from). kube-scheduler also looks at a pod's
// ReplicationController; skiff's API serves none, and an informer on them
// would never sync.
func (pl *PodTopologySpread) defaultConstraints(pod *v1.Pod) []constraint {
	if pl.owners == nil {
		return nil
	}
	sel := pl.owners.siblingSelector(pod)
	if sel.Empty() {
		return nil
	}
	cs := make([]constraint, len(systemDefaults))
	for i := range systemDefaults {
		cs[i] = systemDefaults[i]
		cs[i].selector = sel
	}
	return cs
}

// siblingSelector combines the selectors of the Services selecting pod and of
// its controlling ReplicaSet or StatefulSet, as
// kube-scheduler's default spreading does. These all select pod, so merging
// them cannot conflict.
func (o *ownerListers) siblingSelector(pod *v1.Pod) labels.Selector {
	set := labels.Set{}
	if svcs, err := o.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		for _, svc := range svcs {
			// A nil selector selects no pod (the endpoints are managed by hand).
			if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				set = labels.Merge(set, svc.Spec.Selector)
			}
		}
	}
	sel := set.AsSelector()
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return sel
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return sel
	}
	switch gv.WithKind(owner.Kind) {
	case rsKind:
		if rs, err := o.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			sel = withSelector(sel, rs.Spec.Selector)
		}
	case ssKind:
		if ss, err := o.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			sel = withSelector(sel, ss.Spec.Selector)
		}
	}
	return sel
}

// withSelector adds ls's requirements to sel; an invalid ls adds nothing.
func withSelector(sel labels.Selector, ls *metav1.LabelSelector) labels.Selector {
	other, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return sel
	}
	if reqs, ok := other.Requirements(); ok {
		sel = sel.Add(reqs...)
	}
	return sel
}
