package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

// readyNode is a Ready node in zone with cpu allocatable.
func readyNode(name, zone, cpu string, mod ...func(*corev1.Node)) *corev1.Node {
	n := node(name, zone)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	for _, m := range mod {
		m(n)
	}
	return n
}

func topologyAuto(s *corev1.Service) {
	s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"}
}

// autoFixture is a fixture whose topology has been read from its nodes, as the topology worker does.
func autoFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	fx := newFixture(t, 0, objs...)
	if err := fx.c.syncTopology(context.Background(), topologyKey); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx *fixture) events() []string {
	return controllertest.Events(fx.c.recorder.(*record.FakeRecorder).Events)
}

// hintCounts counts the ready endpoints hinted for each zone.
func (fx *fixture) hintCounts(t *testing.T) map[string]int {
	out := map[string]int{}
	for _, zones := range fx.hintZones(t) {
		for _, z := range zones {
			out[z]++
		}
	}
	return out
}

// Topology Aware Routing: with zones of equal CPU and as many endpoints in each, every endpoint is
// hinted for its own zone, and the Service is told once that hints are on.
func TestTopologyAutoHintsOwnZoneWhenBalanced(t *testing.T) {
	fx := autoFixture(t, service(topologyAuto),
		readyNode("na", "zone-a", "4"), readyNode("nb", "zone-b", "4"),
		pod("a1", "10.42.0.2", onNode("na")), pod("a2", "10.42.0.3", onNode("na")),
		pod("b1", "10.42.0.4", onNode("nb")), pod("b2", "10.42.0.5", onNode("nb")),
		pod("x", "10.42.0.6", onNode("nb"), notReady))
	fx.sync(t)
	want := map[string][]string{"a1": {"zone-a"}, "a2": {"zone-a"}, "b1": {"zone-b"}, "b2": {"zone-b"}, "x": nil}
	if got := fx.hintZones(t); !sameZones(got, want) {
		t.Errorf("hints = %v, want %v", got, want)
	}
	if ev := fx.events(); !slices.Equal(ev, []string{"Normal TopologyAwareHintsEnabled Topology Aware Hints has been enabled, addressType: IPv4"}) {
		t.Errorf("events = %q", ev)
	}
	fx.observe(t)
	fx.sync(t)
	if c, u, d := writes(fx); len(c)+len(u)+len(d) > 0 {
		t.Errorf("second sync wrote creates=%v updates=%v deletes=%v, want nothing", c, u, d)
	}
	if ev := fx.events(); len(ev) > 0 {
		t.Errorf("second sync events = %q, want none", ev)
	}
}

// Endpoints are shared out in proportion to each zone's allocatable CPU: zone-a with three times
// zone-b's CPU gets three of the four endpoints, one of them from zone-b.
func TestTopologyAutoSharesEndpointsByZoneCPU(t *testing.T) {
	fx := autoFixture(t, service(topologyAuto),
		readyNode("na", "zone-a", "3"), readyNode("nb", "zone-b", "1"),
		readyNode("cp", "zone-c", "64", func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }),
		pod("a1", "10.42.0.2", onNode("na")), pod("a2", "10.42.0.3", onNode("na")),
		pod("b1", "10.42.0.4", onNode("nb")), pod("b2", "10.42.0.5", onNode("nb")))
	fx.sync(t)
	got := fx.hintZones(t)
	if !slices.Equal(got["a1"], []string{"zone-a"}) || !slices.Equal(got["a2"], []string{"zone-a"}) {
		t.Errorf("hints = %v, want zone-a endpoints kept in zone-a", got)
	}
	if c := fx.hintCounts(t); c["zone-a"] != 3 || c["zone-b"] != 1 || len(c) != 2 {
		t.Errorf("hints per zone = %v, want zone-a 3, zone-b 1 (the control-plane node's zone not counted)", c)
	}
	fx.observe(t)
	fx.sync(t)
	if c, u, d := writes(fx); len(c)+len(u)+len(d) > 0 {
		t.Errorf("second sync wrote creates=%v updates=%v deletes=%v, want nothing", c, u, d)
	}
}

// When hints would not be safe, none are given, with upstream's TopologyAwareHintsDisabled warning.
func TestTopologyAutoDisabledWhenNotSafe(t *testing.T) {
	two := []runtime.Object{readyNode("na", "zone-a", "4"), readyNode("nb", "zone-b", "4")}
	for _, tc := range []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{"too few endpoints", append(slices.Clone(two), pod("a", "10.42.0.2", onNode("na"))),
			"Insufficient number of endpoints (1 endpoints, 2 zones)"},
		{"endpoint without zone", append(slices.Clone(two), node("nozone", ""),
			pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb")), pod("c", "10.42.0.4", onNode("nozone")), pod("d", "10.42.0.5", onNode("nb"))),
			"One or more endpoints do not have a zone specified"},
		{"node without cpu", append(slices.Clone(two), readyNode("nc", "zone-a", "0"),
			pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb"))),
			"Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"},
		{"nodes ready in one zone", []runtime.Object{readyNode("na", "zone-a", "4"),
			readyNode("nb", "zone-b", "4", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
			pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb"))},
			"Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"},
		{"minimum over the overload threshold", []runtime.Object{readyNode("na", "zone-a", "2"), readyNode("nb", "zone-b", "1"), readyNode("nc", "zone-c", "1"),
			pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb")), pod("c", "10.42.0.4", onNode("nc"))},
			"Unable to allocate minimum required endpoints to each zone without exceeding overload threshold (3 endpoints, 3 zones)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := autoFixture(t, append([]runtime.Object{service(topologyAuto, trafficDistribution(corev1.ServiceTrafficDistributionPreferClose))}, tc.objs...)...)
			fx.sync(t)
			for pod, zones := range fx.hintZones(t) {
				if zones != nil {
					t.Errorf("%s: hints %v, want none", pod, zones)
				}
			}
			want := "Warning TopologyAwareHintsDisabled " + tc.want + ", addressType: IPv4"
			if ev := fx.events(); !slices.Contains(ev, want) {
				t.Errorf("events = %q, want %q", ev, want)
			}
		})
	}
}

// Hints given by Topology Aware Routing are taken away, with a warning, once it is switched off; if
// trafficDistribution is PreferClose, its same-zone hints replace them.
func TestTopologyAutoSwitchedOff(t *testing.T) {
	objs := []runtime.Object{readyNode("na", "zone-a", "3"), readyNode("nb", "zone-b", "1"),
		pod("a1", "10.42.0.2", onNode("na")), pod("a2", "10.42.0.3", onNode("na")),
		pod("b1", "10.42.0.4", onNode("nb")), pod("b2", "10.42.0.5", onNode("nb"))}
	for _, tc := range []struct {
		name string
		then *corev1.Service
		want map[string]int
	}{
		{"annotation removed", service(), map[string]int{}},
		{"annotation set otherwise", service(func(s *corev1.Service) { s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Disabled"} }), map[string]int{}},
		{"PreferClose left", service(trafficDistribution(corev1.ServiceTrafficDistributionPreferClose)), map[string]int{"zone-a": 2, "zone-b": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := autoFixture(t, append([]runtime.Object{service(topologyAuto, trafficDistribution(corev1.ServiceTrafficDistributionPreferClose))}, objs...)...)
			fx.sync(t)
			fx.observe(t)
			fx.events()
			if c := fx.hintCounts(t); c["zone-a"] != 3 {
				t.Fatalf("hints per zone = %v, want topology's (zone-a 3)", c)
			}
			fx.setService(t, tc.then)
			fx.sync(t)
			if c := fx.hintCounts(t); fmt.Sprint(c) != fmt.Sprint(tc.want) {
				t.Errorf("hints per zone = %v, want %v", c, tc.want)
			}
			want := "Warning TopologyAwareHintsDisabled Topology Aware Hints has been disabled, addressType: IPv4"
			if ev := fx.events(); !slices.Equal(ev, []string{want}) {
				t.Errorf("events = %q, want %q", ev, want)
			}
			fx.observe(t)
			fx.sync(t)
			if ev := fx.events(); len(ev) > 0 {
				t.Errorf("next sync events = %q, want none", ev)
			}
		})
	}
}

// The deprecated service.kubernetes.io/topology-aware-hints annotation turns Topology Aware Routing
// on too, and wins over topology-mode when both are set.
func TestTopologyDeprecatedAnnotation(t *testing.T) {
	objs := []runtime.Object{readyNode("na", "zone-a", "4"), readyNode("nb", "zone-b", "4"),
		pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb"))}
	for _, tc := range []struct {
		ann  map[string]string
		want bool
	}{
		{map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}, true},
		{map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "Disabled", corev1.AnnotationTopologyMode: "Auto"}, false},
	} {
		fx := autoFixture(t, append([]runtime.Object{service(func(s *corev1.Service) { s.Annotations = tc.ann })}, objs...)...)
		fx.sync(t)
		if got := len(fx.hintCounts(t)) > 0; got != tc.want {
			t.Errorf("%v: hinted = %v, want %v", tc.ann, got, tc.want)
		}
	}
}

// A node change that leaves a hinted Service with too few endpoints in some zone queues it, as
// Kubernetes' topology worker does; other node changes queue nothing.
func TestNodeChangesQueueOverloadedServices(t *testing.T) {
	fx := autoFixture(t, service(topologyAuto),
		readyNode("na", "zone-a", "4"), readyNode("nb", "zone-b", "4"),
		pod("a", "10.42.0.2", onNode("na")), pod("b", "10.42.0.3", onNode("nb")))
	fx.sync(t)
	fx.observe(t)
	fx.queued()
	nodes := fx.f.Core().V1().Nodes().Informer()

	// Another node in zone-b: zone-b now has two thirds of the CPU, and its one endpoint is under
	// the ceil(2 * 2/3 / 1.2) = 2 that the overload threshold allows.
	nb2 := readyNode("nb2", "zone-b", "4")
	controllertest.Load(t, nodes, nb2)
	fx.c.onNodeAdd(nb2)
	fx.runTopology(t)
	if q := fx.queued(); !slices.Equal(q, []string{"ns/web"}) {
		t.Errorf("queued %v after zone-b doubled its CPU, want ns/web (overloaded)", q)
	}

	// An update that changes neither readiness nor zone does not look at the topology.
	upd := nb2.DeepCopy()
	upd.Labels["x"] = "y"
	fx.c.onNodeUpdate(nb2, upd)
	if n := fx.c.topologyQueue.Len(); n != 0 {
		t.Errorf("topology queue = %d after a label change, want 0", n)
	}
	// A zone change does.
	upd = nb2.DeepCopy()
	upd.Labels[corev1.LabelTopologyZone] = "zone-a"
	fx.c.onNodeUpdate(nb2, upd)
	if n := fx.c.topologyQueue.Len(); n != 1 {
		t.Errorf("topology queue = %d after a zone change, want 1", n)
	}
}

// runTopology runs the topology worker's pending item.
func (fx *fixture) runTopology(t *testing.T) {
	t.Helper()
	for fx.c.topologyQueue.Len() > 0 {
		k, _ := fx.c.topologyQueue.Get()
		if err := fx.c.syncTopology(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		fx.c.topologyQueue.Done(k)
	}
}

// Run reads the zones before its first Service sync: a Service asking for Topology Aware Routing
// gets its hints from the first write, not a "not enough node information" removal that nothing
// would undo until one of its pods changed.
func TestRunReadsZonesBeforeTheFirstSync(t *testing.T) {
	objs := []runtime.Object{service(topologyAuto),
		readyNode("na", "zone-a", "4"), readyNode("nb", "zone-b", "4"),
		pod("a1", "10.42.0.2", onNode("na")), pod("a2", "10.42.0.3", onNode("na")),
		pod("b1", "10.42.0.4", onNode("nb")), pod("b2", "10.42.0.5", onNode("nb"))}
	ctx, cancel := context.WithCancel(context.Background())
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes(), f.Discovery().V1().EndpointSlices(), recorder, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 2) }()
	defer func() { cancel(); <-done; f.Shutdown() }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			for _, e := range list.Items[0].Endpoints {
				if e.Hints == nil || len(e.Hints.ForZones) != 1 || e.Hints.ForZones[0].Name != *e.Zone {
					t.Errorf("endpoint %s hints = %v, want its own zone %s", e.Addresses[0], e.Hints, *e.Zone)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no EndpointSlice written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The event follows the write.
	select {
	case ev := <-recorder.Events:
		if ev != "Normal TopologyAwareHintsEnabled Topology Aware Hints has been enabled, addressType: IPv4" {
			t.Errorf("event = %q", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event recorded")
	}
	if ev := controllertest.Events(recorder.Events); len(ev) > 0 {
		t.Errorf("more events: %q", ev)
	}
}
