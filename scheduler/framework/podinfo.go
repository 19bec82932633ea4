package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AffinityTerm is a parsed v1.PodAffinityTerm: which pods it selects
// (namespaces and a label selector) and the node label that defines "together".
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// Matches reports whether pod is selected by the term. nsLabels are the labels
// of pod's namespace; they are only consulted when the term has a namespace
// selector (nil labels then match only an everything selector).
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || (t.NamespaceSelector != nil && t.NamespaceSelector.Matches(nsLabels)) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with what the plugins would otherwise recompute on every
// node: its requests and its parsed affinity terms.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod reserves on its node.
	Requests *Resource
	// NonZeroRequests is Requests with scoring defaults for unset CPU/memory.
	NonZeroRequests *Resource

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseError is set when a label selector in the pod's affinity is invalid;
	// InterPodAffinity reports it instead of guessing.
	ParseError error
}

// NewPodInfo parses pod once.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod), NonZeroRequests: PodNonZeroRequests(pod)}
	aff := pod.Spec.Affinity
	if aff == nil {
		return pi
	}
	var errs []error
	if a := aff.PodAffinity; a != nil {
		pi.RequiredAffinityTerms, errs = parseTerms(pod, a.RequiredDuringSchedulingIgnoredDuringExecution, errs)
		pi.PreferredAffinityTerms, errs = parseWeighted(pod, a.PreferredDuringSchedulingIgnoredDuringExecution, errs)
	}
	if a := aff.PodAntiAffinity; a != nil {
		pi.RequiredAntiAffinityTerms, errs = parseTerms(pod, a.RequiredDuringSchedulingIgnoredDuringExecution, errs)
		pi.PreferredAntiAffinityTerms, errs = parseWeighted(pod, a.PreferredDuringSchedulingIgnoredDuringExecution, errs)
	}
	if len(errs) > 0 {
		pi.ParseError = errs[0]
	}
	return pi
}

// HasAffinity reports whether the pod has any pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

func parseTerms(pod *v1.Pod, terms []v1.PodAffinityTerm, errs []error) ([]AffinityTerm, []error) {
	var out []AffinityTerm
	for i := range terms {
		t, err := NewAffinityTerm(pod, &terms[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *t)
	}
	return out, errs
}

func parseWeighted(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm, errs []error) ([]WeightedAffinityTerm, []error) {
	var out []WeightedAffinityTerm
	for i := range terms {
		t, err := NewAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: *t, Weight: terms[i].Weight})
	}
	return out, errs
}

// NewAffinityTerm parses one term of pod. An empty namespace list with no
// namespace selector means the pod's own namespace. The term's
// matchLabelKeys and mismatchLabelKeys are not looked at: the API server
// merged them into its label selector when the pod was created, with the
// label values the pod had then, as kube-scheduler relies on.
func NewAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (*AffinityTerm, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: affinity label selector: %w", pod.Namespace, pod.Name, err)
	}
	if term.LabelSelector == nil {
		selector = labels.Nothing()
	}
	namespaces := sets.New(term.Namespaces...)
	var nsSelector labels.Selector
	if term.NamespaceSelector != nil {
		nsSelector, err = metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: affinity namespace selector: %w", pod.Namespace, pod.Name, err)
		}
	} else if len(namespaces) == 0 {
		namespaces.Insert(pod.Namespace)
	}
	return &AffinityTerm{Namespaces: namespaces, Selector: selector, TopologyKey: term.TopologyKey, NamespaceSelector: nsSelector}, nil
}
