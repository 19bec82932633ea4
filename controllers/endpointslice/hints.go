package endpointslice

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// topologyModeAuto reports whether the Service asks for Topology Aware Routing, as Kubernetes'
// hintsEnabled: service.kubernetes.io/topology-aware-hints (deprecated, but it wins when both are
// set) or service.kubernetes.io/topology-mode, "Auto" or "auto".
func topologyModeAuto(annotations map[string]string) bool {
	v, ok := annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v = annotations[corev1.AnnotationTopologyMode]
	}
	return v == "Auto" || v == "auto"
}

// preferClose reports whether the Service's hints come from spec.trafficDistribution. As in
// Kubernetes v1.33, only PreferClose counts (PreferSameZone and PreferSameNode sit behind the alpha
// PreferSameTrafficDistribution gate, off there), and the topology annotation takes precedence.
func preferClose(svc *corev1.Service) bool {
	td := svc.Spec.TrafficDistribution
	return td != nil && *td == corev1.ServiceTrafficDistributionPreferClose && !topologyModeAuto(svc.Annotations)
}

// hintedSlices says which slices a hinting step may change: the plan's creates and updates, which it
// rewrites freely, and the slices left unchanged, which it moves into the updates (as copies) only
// when their hints must change, so a sync with the right hints in place writes nothing.
type hintedSlices struct {
	create, update, unchanged []*discoveryv1.EndpointSlice
}

// rewrite applies fix to every slice written and to each unchanged slice stale says needs it.
func (h *hintedSlices) rewrite(stale func(*discoveryv1.EndpointSlice) bool, fix func(*discoveryv1.EndpointSlice)) {
	kept := h.unchanged[:0:0]
	for _, s := range h.unchanged {
		if stale(s) {
			h.update = append(h.update, s.DeepCopy())
		} else {
			kept = append(kept, s)
		}
	}
	h.unchanged = kept
	for _, s := range h.create {
		fix(s)
	}
	for _, s := range h.update {
		fix(s)
	}
}

// addSameZoneHints gives each ready endpoint a hint for its own zone, as Kubernetes' trafficdist
// (PreferClose): a ready endpoint without a zone gets no hint; one not ready is left as it is (it
// gets no traffic through hints anyway), and in an unchanged slice does not make it be rewritten.
func addSameZoneHints(h *hintedSlices) {
	h.rewrite(func(s *discoveryv1.EndpointSlice) bool {
		for _, e := range s.Endpoints {
			if !isReady(e) {
				continue
			}
			if e.Zone != nil {
				if e.Hints == nil || len(e.Hints.ForZones) != 1 || e.Hints.ForZones[0].Name != *e.Zone {
					return true
				}
			} else if e.Hints != nil && len(e.Hints.ForZones) > 0 {
				return true
			}
		}
		return false
	}, func(s *discoveryv1.EndpointSlice) {
		for i, e := range s.Endpoints {
			if !isReady(e) {
				continue
			}
			s.Endpoints[i].Hints = nil
			if e.Zone != nil {
				s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: *e.Zone}}}
			}
		}
	})
}

// removeHints clears every endpoint's hints, as Kubernetes' RemoveHintsFromSlices.
func removeHints(h *hintedSlices) {
	h.rewrite(func(s *discoveryv1.EndpointSlice) bool {
		for _, e := range s.Endpoints {
			if e.Hints != nil {
				return true
			}
		}
		return false
	}, func(s *discoveryv1.EndpointSlice) {
		for i := range s.Endpoints {
			s.Endpoints[i].Hints = nil
		}
	})
}

func isReady(e discoveryv1.Endpoint) bool { return e.Conditions.Ready != nil && *e.Conditions.Ready }

// hint sets the hints of the slices planned for one address family, as Kubernetes' reconciler does
// once it knows which slices it writes: the topology annotation "Auto" comes first (Topology Aware
// Routing); failing it, trafficDistribution PreferClose; failing both, hints are removed. A Service
// whose Topology Aware Routing hints are dropped is told so.
func (c *Controller) hint(key string, svc *corev1.Service, at discoveryv1.AddressType, p *plan, unchanged []*discoveryv1.EndpointSlice) {
	h := hintedSlices{create: p.create, update: p.update, unchanged: unchanged}
	if topologyModeAuto(svc.Annotations) {
		p.events = append(p.events, c.topology.addHints(key, at, &h)...)
	} else {
		if c.topology.hintsOn(key) {
			p.events = append(p.events, hintsDisabled(msgHintsDisabled, at))
		}
		c.topology.forget(key, at)
		if preferClose(svc) {
			addSameZoneHints(&h)
		} else {
			removeHints(&h)
		}
	}
	p.create, p.update = h.create, h.update
}
