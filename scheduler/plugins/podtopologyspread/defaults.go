package podtopologyspread

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// systemDefaults are kube-scheduler's default constraints (the "System"
// defaulting of PodTopologySpreadArgs) for a pod that sets none: spread the
// pods of its Services and controller over nodes, and more loosely over
// zones. They only score, never filter.
var systemDefaults = []v1.TopologySpreadConstraint{
	{MaxSkew: 3, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway},
	{MaxSkew: 5, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway},
}

// DefaultingType says where the constraints of a pod that sets none come
// from, as PodTopologySpreadArgs' defaultingType.
type DefaultingType string

const (
	// SystemDefaulting (the default): kube-scheduler's built-in constraints,
	// hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway.
	SystemDefaulting DefaultingType = "System"
	// ListDefaulting: Args.DefaultConstraints, possibly none.
	ListDefaulting DefaultingType = "List"
)

// Args configure the plugin, as kube-scheduler's PodTopologySpreadArgs.
type Args struct {
	// DefaultingType is SystemDefaulting when empty.
	DefaultingType DefaultingType
	// DefaultConstraints apply, with ListDefaulting, to pods that set no
	// constraints of their own; their selector is the pod's siblings', so they
	// may not have one. DoNotSchedule ones filter as a pod's own would.
	DefaultConstraints []v1.TopologySpreadConstraint
}

// Validate checks a as kube-scheduler checks PodTopologySpreadArgs.
func (a Args) Validate() error {
	var errs field.ErrorList
	switch a.DefaultingType {
	case "", SystemDefaulting:
		if len(a.DefaultConstraints) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("defaultingType"), SystemDefaulting, "when .defaultConstraints are not empty"))
		}
	case ListDefaulting:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("defaultingType"), a.DefaultingType, []DefaultingType{SystemDefaulting, ListDefaulting}))
	}
	list := field.NewPath("defaultConstraints")
	for i, c := range a.DefaultConstraints {
		p := list.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "not in valid range (0, inf)"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		switch c.WhenUnsatisfiable {
		case v1.DoNotSchedule, v1.ScheduleAnyway:
		case "":
			errs = append(errs, field.Required(p.Child("whenUnsatisfiable"), "can not be empty"))
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []v1.UnsatisfiableConstraintAction{v1.DoNotSchedule, v1.ScheduleAnyway}))
		}
		if c.LabelSelector != nil {
			errs = append(errs, field.Forbidden(p.Child("labelSelector"), "constraint must not define a selector, as they deduced for each pod"))
		}
		for _, prev := range a.DefaultConstraints[:i] {
			if prev.TopologyKey == c.TopologyKey && prev.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
	}
	return errs.ToAggregate()
}

var (
	rcKind = v1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// ownerListers find what a pod belongs to, for the default constraints' selector.
type ownerListers struct {
	services               corelisters.ServiceLister
	replicationControllers corelisters.ReplicationControllerLister
	replicaSets            appslisters.ReplicaSetLister
	statefulSets           appslisters.StatefulSetLister
}

// defaultConstraints returns the default constraints with whenUnsatisfiable
// action, selecting the pod's siblings, or nil when the pod belongs to no
// Service, ReplicationController, ReplicaSet or StatefulSet (there is
// nothing to spread it from).
func (pl *PodTopologySpread) defaultConstraints(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	if pl.owners == nil || len(pl.defaults) == 0 {
		return nil, nil
	}
	cs, err := parseConstraints(pl.defaults, pod.Labels, action)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	sel := pl.owners.siblingSelector(pod)
	if sel.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].selector = sel
	}
	return cs, nil
}

// siblingSelector combines the selectors of the Services selecting pod and of
// its controlling ReplicationController, ReplicaSet or StatefulSet, as
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
	case rcKind:
		if rc, err := o.replicationControllers.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
			sel = labels.Merge(set, rc.Spec.Selector).AsSelector()
		}
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
