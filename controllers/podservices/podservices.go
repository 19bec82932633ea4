// Package podservices says which Services a pod event concerns, for the controllers that turn
// selected pods into endpoints (Endpoints and EndpointSlices), as Kubernetes' endpointslice
// utilities (GetPodServiceMemberships, GetServicesToUpdateOnPodChange) do for both of its.
package podservices

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiffkube/skiff/controllers/podstate"
)

// Selecting returns the keys ("namespace/name") of the Services in namespace whose selector
// matches lbls. A Service without a selector selects nothing.
func Selecting(services corelisters.ServiceLister, namespace string, lbls map[string]string) []string {
	svcs, err := services.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, s := range svcs {
		if s.Spec.Selector != nil && labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(lbls)) {
			keys = append(keys, s.Namespace+"/"+s.Name)
		}
	}
	return keys
}

// ToUpdate returns the keys of the Services a pod update concerns: those selecting the pod when
// its endpoint changed, and those that start or stop selecting it when its labels (or hostname
// and subdomain) changed. Resyncs, and status changes such as a container restart that leave
// the endpoint as it was, concern none.
func ToUpdate(services corelisters.ServiceLister, old, cur *corev1.Pod) []string {
	if cur.ResourceVersion == old.ResourceVersion {
		return nil
	}
	endpointChanged, membershipChanged := EndpointsChanged(old, cur)
	if !endpointChanged && !membershipChanged {
		return nil
	}
	keys := Selecting(services, cur.Namespace, cur.Labels)
	if membershipChanged {
		before := Selecting(services, old.Namespace, old.Labels)
		if endpointChanged {
			keys = append(keys, before...)
		} else {
			// Only the membership changed: the Services that selected it and still do list it as before.
			both := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !slices.Contains(before, k) })
			keys = slices.DeleteFunc(append(keys, before...), func(k string) bool { return slices.Contains(both, k) })
		}
	}
	return keys
}

// EndpointsChanged reports, as Kubernetes' podEndpointsChanged, whether a pod update can change
// its endpoint (deletion, readiness or IPs) and whether it can change which Services list it
// (labels, or hostname and subdomain, which set the endpoint's hostname). Unlike Kubernetes', a
// pod turning Succeeded or Failed counts too: its endpoint goes, even if it was not ready before
// (Kubernetes leaves a not-ready one listed until something else syncs the Service). A pod that
// finishes before it had an address never had an endpoint, so, as in Kubernetes, that does not
// count; nor does the deletion of a finished pod, which has none either.
func EndpointsChanged(old, cur *corev1.Pod) (endpoint, membership bool) {
	membership = !maps.Equal(old.Labels, cur.Labels) ||
		old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain
	finishedBoth := podstate.IsTerminal(old) && podstate.IsTerminal(cur)
	endpoint = (!finishedBoth && !timeEqual(old.DeletionTimestamp, cur.DeletionTimestamp)) ||
		podstate.IsReady(old) != podstate.IsReady(cur) ||
		(podstate.IsTerminal(old) != podstate.IsTerminal(cur) && hasAddress(old)) ||
		old.Status.PodIP != cur.Status.PodIP ||
		!slices.Equal(old.Status.PodIPs, cur.Status.PodIPs)
	return endpoint, membership
}

// hasAddress says whether the pod has an IP, without which it is never an endpoint.
func hasAddress(p *corev1.Pod) bool {
	return p.Status.PodIP != "" || len(p.Status.PodIPs) > 0
}

func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}
