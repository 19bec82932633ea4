package endpointslice

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func trafficDistribution(v string) func(*corev1.Service) {
	return func(s *corev1.Service) { s.Spec.TrafficDistribution = &v }
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

// hintZones maps each pod to the zones of its endpoint's hints; nil when it has no hints.
func (fx *fixture) hintZones(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range fx.slices(t) {
		for _, e := range s.Endpoints {
			var zones []string
			if e.Hints != nil {
				zones = []string{}
				for _, z := range e.Hints.ForZones {
					zones = append(zones, z.Name)
				}
			}
			out[e.TargetRef.Name] = zones
		}
	}
	return out
}

// setService replaces the Service the informer holds.
func (fx *fixture) setService(t *testing.T, svc *corev1.Service) {
	t.Helper()
	if err := fx.f.Core().V1().Services().Informer().GetIndexer().Update(svc); err != nil {
		t.Fatal(err)
	}
}

func sameZones(got, want map[string][]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || (g == nil) != (w == nil) || !slices.Equal(g, w) {
			return false
		}
	}
	return true
}

// trafficDistribution: PreferClose gives every ready endpoint with a zone a hint for its own zone, as
// Kubernetes' trafficdist.ReconcileHints does; endpoints without a zone, and endpoints not ready, get
// none.
func TestPreferCloseHintsEachReadyEndpointForItsZone(t *testing.T) {
	fx := newFixture(t, 0, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose)),
		node("node2", "zone-b"), node("nozone", ""),
		pod("a", "10.42.0.2"),
		pod("b", "10.42.0.3", onNode("node2")),
		pod("c", "10.42.0.4", onNode("nozone")),
		pod("d", "10.42.0.5", notReady),
		pod("e", "10.42.0.6", terminating),
	)
	fx.sync(t)
	want := map[string][]string{"a": {"zone-a"}, "b": {"zone-b"}, "c": nil, "d": nil, "e": nil}
	if got := fx.hintZones(t); !sameZones(got, want) {
		t.Fatalf("hints = %v, want %v", got, want)
	}

	// Hints in place and nothing changed: nothing is written again.
	fx.observe(t)
	fx.sync(t)
	if c, u, d := writes(fx); len(c)+len(u)+len(d) > 0 {
		t.Errorf("second sync wrote creates=%v updates=%v deletes=%v, want nothing", c, u, d)
	}

	// A pod becoming ready gets its hint with the slice's update.
	fx.setPods(t, pod("a", "10.42.0.2"), pod("b", "10.42.0.3", onNode("node2")), pod("c", "10.42.0.4", onNode("nozone")),
		pod("d", "10.42.0.5"), pod("e", "10.42.0.6", terminating))
	fx.sync(t)
	want["d"] = []string{"zone-a"}
	if got := fx.hintZones(t); !sameZones(got, want) {
		t.Errorf("after d became ready: hints = %v, want %v", got, want)
	}
}

// Slices whose hints are missing or wrong are rewritten; only those.
func TestPreferCloseFixesSlicesWithWrongHints(t *testing.T) {
	fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"), pod("b", "10.42.0.3", notReady))
	fx.sync(t)
	fx.observe(t)

	// Setting the field writes the slice written before it, now unchanged otherwise.
	fx.setService(t, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose)))
	fx.sync(t)
	if _, u, _ := writes(fx); len(u) != 1 {
		t.Fatalf("updates = %v, want the one slice", u)
	}
	want := map[string][]string{"a": {"zone-a"}, "b": nil}
	if got := fx.hintZones(t); !sameZones(got, want) {
		t.Fatalf("hints = %v, want %v", got, want)
	}
	fx.observe(t)

	// Someone else puts a wrong hint on a ready endpoint: it is put right.
	s := fx.slices(t)[0]
	for i := range s.Endpoints {
		s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-x"}}}
	}
	s.Generation++
	if _, err := fx.client.DiscoveryV1().EndpointSlices("ns").Update(context.Background(), &s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.observe(t)
	fx.sync(t)
	// As Kubernetes, the slice is rewritten for a's hint; b, not ready, is not looked at and keeps its
	// stray one (an endpoint not ready is not routed to by hints anyway).
	want = map[string][]string{"a": {"zone-a"}, "b": {"zone-x"}}
	if got := fx.hintZones(t); !sameZones(got, want) {
		t.Errorf("after stray hints: hints = %v, want %v", got, want)
	}

	// A stray hint on a not-ready endpoint alone does not make the slice be written.
	fx.observe(t)
	fx.sync(t)
	if c, u, d := writes(fx); len(c)+len(u)+len(d) > 0 {
		t.Errorf("stray hint on a not-ready endpoint: creates=%v updates=%v deletes=%v, want nothing", c, u, d)
	}
}

// Hints go when trafficDistribution is unset or set to a value Kubernetes v1.33 does not act on
// (PreferSameZone and PreferSameNode are behind the alpha PreferSameTrafficDistribution gate).
func TestHintsRemovedWithoutPreferClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Service)
	}{
		{"unset", func(*corev1.Service) {}},
		{"PreferSameNode", trafficDistribution(corev1.ServiceTrafficDistributionPreferSameNode)},
		{"unknown", trafficDistribution("Sometimes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, 0, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose)),
				pod("a", "10.42.0.2"), pod("b", "10.42.0.3"))
			fx.sync(t)
			fx.observe(t)
			if got := fx.hintZones(t); got["a"] == nil {
				t.Fatalf("hints = %v, want a hinted first", got)
			}
			fx.setService(t, service(tc.mod))
			fx.sync(t)
			want := map[string][]string{"a": nil, "b": nil}
			if got := fx.hintZones(t); !sameZones(got, want) {
				t.Errorf("hints = %v, want none", got)
			}
			fx.observe(t)
			fx.sync(t)
			if c, u, d := writes(fx); len(c)+len(u)+len(d) > 0 {
				t.Errorf("sync after removal wrote creates=%v updates=%v deletes=%v", c, u, d)
			}
		})
	}
}

// The topology-mode annotation wins over trafficDistribution, as in Kubernetes: with it on, the
// same-zone hints of PreferClose are not given (here the nodes report no CPU, so Topology Aware
// Routing cannot hint either and the hints are removed).
func TestTopologyAnnotationTakesPrecedenceOverTrafficDistribution(t *testing.T) {
	for _, ann := range []string{corev1.AnnotationTopologyMode, corev1.DeprecatedAnnotationTopologyAwareHints} {
		t.Run(ann, func(t *testing.T) {
			fx := newFixture(t, 0, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose)), pod("a", "10.42.0.2"))
			fx.sync(t)
			fx.observe(t)
			fx.setService(t, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose),
				func(s *corev1.Service) { s.Annotations = map[string]string{ann: "Auto"} }))
			fx.sync(t)
			if got := fx.hintZones(t); got["a"] != nil {
				t.Errorf("hints = %v, want none while the annotation is on", got)
			}
		})
	}
	// Any other value leaves trafficDistribution in charge.
	fx := newFixture(t, 0, service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose),
		func(s *corev1.Service) { s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Disabled"} }),
		pod("a", "10.42.0.2"))
	fx.sync(t)
	if got := fx.hintZones(t); !slices.Equal(got["a"], []string{"zone-a"}) {
		t.Errorf("topology-mode Disabled: hints = %v, want a hinted for zone-a", got)
	}
}
