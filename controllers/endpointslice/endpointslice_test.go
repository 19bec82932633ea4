package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	f      informers.SharedInformerFactory
}

// newFixture holds objs and the node node1, in zone-a, where pod() places pods.
func newFixture(t *testing.T, maxPer int, objs ...runtime.Object) *fixture {
	t.Helper()
	objs = append([]runtime.Object{node("node1", "zone-a")}, objs...)
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Nodes(), f.Discovery().V1().EndpointSlices(), record.NewFakeRecorder(100), Options{MaxEndpointsPerSlice: maxPer})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Service:
			controllertest.Load(t, f.Core().V1().Services().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.Node:
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), o)
		case *discoveryv1.EndpointSlice:
			controllertest.Load(t, f.Discovery().V1().EndpointSlices().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, f: f}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
}

func (fx *fixture) slices(t *testing.T) []discoveryv1.EndpointSlice {
	t.Helper()
	l, err := fx.client.DiscoveryV1().EndpointSlices("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func service(mod ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-svc", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.43.0.10",
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
				{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9100)},
			},
		},
	}
	for _, m := range mod {
		m(s)
	}
	return s
}

func node(name, zone string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}}}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	return n
}

type podOpt func(*corev1.Pod)

func pod(name, ip string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod)    { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) { t := metav1.NewTime(time.Now()); p.DeletionTimestamp = &t }
func httpOn(port int32) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = port }
}

func byName(s discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, e := range s.Endpoints {
		out[e.TargetRef.Name] = e
	}
	return out
}

func TestEndpointConditions(t *testing.T) {
	fx := newFixture(t, 0, service(),
		pod("ready", "10.42.0.2"),
		pod("notready", "10.42.0.3", notReady),
		pod("leaving", "10.42.0.4", terminating),
		pod("noip", ""),
		pod("done", "10.42.0.5", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("other", "10.42.0.6", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
	)
	fx.sync(t)
	sl := fx.slices(t)
	if len(sl) != 1 {
		t.Fatalf("slices = %d, want 1", len(sl))
	}
	s := sl[0]
	if s.Labels[discoveryv1.LabelServiceName] != "web" || s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels["team"] != "a" {
		t.Errorf("labels = %v", s.Labels)
	}
	if ref := metav1.GetControllerOf(&s); ref == nil || ref.Kind != "Service" || ref.UID != "uid-svc" {
		t.Errorf("owner = %v", s.OwnerReferences)
	}
	if s.AddressType != discoveryv1.AddressTypeIPv4 {
		t.Errorf("addressType = %s", s.AddressType)
	}
	eps := byName(s)
	want := map[string][3]bool{ // ready, serving, terminating
		"ready":    {true, true, false},
		"notready": {false, false, false},
		"leaving":  {false, true, true},
	}
	if len(eps) != len(want) {
		t.Fatalf("endpoints = %v, want %v", eps, want)
	}
	for name, w := range want {
		c := eps[name].Conditions
		if *c.Ready != w[0] || *c.Serving != w[1] || *c.Terminating != w[2] {
			t.Errorf("%s: ready=%v serving=%v terminating=%v, want %v", name, *c.Ready, *c.Serving, *c.Terminating, w)
		}
	}
	if e := eps["ready"]; e.Addresses[0] != "10.42.0.2" || e.NodeName == nil || *e.NodeName != "node1" {
		t.Errorf("endpoint = %+v", e)
	}
	ports := map[string]int32{}
	for _, p := range s.Ports {
		ports[*p.Name] = *p.Port
	}
	if ports["http"] != 8080 || ports["metrics"] != 9100 {
		t.Errorf("ports = %v, want http→8080 (named) and metrics→9100", ports)
	}
}

func TestPublishNotReadyAddressesKeepsServing(t *testing.T) {
	fx := newFixture(t, 0, service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
		pod("ready", "10.42.0.2"),
		pod("notready", "10.42.0.3", notReady),
		pod("leaving", "10.42.0.4", terminating),
		pod("leavingnotready", "10.42.0.5", terminating, notReady),
	)
	fx.sync(t)
	eps := byName(fx.slices(t)[0])
	want := map[string][3]bool{ // ready, serving, terminating
		"ready":           {true, true, false},
		"notready":        {true, false, false},
		"leaving":         {true, true, true},
		"leavingnotready": {true, false, true},
	}
	if len(eps) != len(want) {
		t.Fatalf("endpoints = %v, want %v", eps, want)
	}
	for name, w := range want {
		c := eps[name].Conditions
		if *c.Ready != w[0] || *c.Serving != w[1] || *c.Terminating != w[2] {
			t.Errorf("%s: ready=%v serving=%v terminating=%v, want %v", name, *c.Ready, *c.Serving, *c.Terminating, w)
		}
	}
}

func TestSlicing(t *testing.T) {
	tests := []struct {
		name       string
		maxPer     int
		pods       []runtime.Object
		wantSizes  []int
		wantHTTPOn []int32
	}{
		{"one slice per resolved port list", 0, []runtime.Object{
			pod("a", "10.42.0.2"), pod("b", "10.42.0.3", httpOn(8081)), pod("c", "10.42.0.4"),
		}, []int{1, 2}, []int32{8081, 8080}},
		{"a pod without the named port keeps its other ports", 0, []runtime.Object{
			pod("a", "10.42.0.2"), pod("b", "10.42.0.3", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }),
		}, []int{1, 1}, []int32{8080, 0}},
		{"at most maxPer endpoints per slice", 2, []runtime.Object{
			pod("a", "10.42.0.2"), pod("b", "10.42.0.3"), pod("c", "10.42.0.4"), pod("d", "10.42.0.5"), pod("e", "10.42.0.6"),
		}, []int{2, 2, 1}, nil},
		{"no pods gives one empty placeholder", 0, nil, []int{0}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.maxPer, append([]runtime.Object{service()}, tc.pods...)...)
			fx.sync(t)
			sl := fx.slices(t)
			var sizes []int
			var httpOn []int32
			for _, s := range sl {
				sizes = append(sizes, len(s.Endpoints))
				if tc.wantHTTPOn != nil {
					var port int32
					for _, p := range s.Ports {
						if *p.Name == "http" {
							port = *p.Port
						}
					}
					httpOn = append(httpOn, port)
				}
			}
			if !sameMultiset(sizes, tc.wantSizes) {
				t.Errorf("slice sizes = %v, want %v", sizes, tc.wantSizes)
			}
			if tc.wantHTTPOn != nil && !sameMultiset(httpOn, tc.wantHTTPOn) {
				t.Errorf("http ports = %v, want %v", httpOn, tc.wantHTTPOn)
			}
		})
	}
}

func TestStaleCacheDoesNotDuplicate(t *testing.T) {
	fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"))
	fx.sync(t)
	// The informer has not delivered the created slice yet: the sync waits, and is retried.
	if err := fx.c.sync(context.Background(), "ns/web"); !errors.Is(err, errStale) {
		t.Errorf("sync on a stale cache: %v, want errStale", err)
	}
	if n := len(fx.slices(t)); n != 1 {
		t.Fatalf("slices = %d after two syncs with a stale cache, want 1", n)
	}
	// Delivering it satisfies the expectation; a further sync changes nothing.
	s := fx.slices(t)[0]
	controllertest.Load(t, fx.f.Discovery().V1().EndpointSlices().Informer(), &s)
	fx.c.onSliceAdd(&s)
	fx.client.ClearActions()
	fx.sync(t)
	if acts := controllertest.Filter(fx.client.Actions(), "", "endpointslices"); len(acts) != 0 {
		t.Errorf("writes on an up-to-date slice: %v", acts)
	}
}

func TestUpdatesAndDeletes(t *testing.T) {
	yes := true
	old := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", UID: "uid-slice",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "uid-svc", Controller: &yes, BlockOwnerDeletion: &yes}}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	foreign := old.DeepCopy()
	foreign.Name, foreign.UID, foreign.Labels = "web-manual", "uid-manual", map[string]string{discoveryv1.LabelServiceName: "web"}

	t.Run("a changed pod updates the existing slice in place", func(t *testing.T) {
		fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"), old.DeepCopy(), foreign.DeepCopy())
		fx.sync(t)
		if n := len(controllertest.Filter(fx.client.Actions(), "create", "endpointslices")); n != 0 {
			t.Errorf("created %d slices, want an update", n)
		}
		got, _ := fx.client.DiscoveryV1().EndpointSlices("ns").Get(context.Background(), "web-abc", metav1.GetOptions{})
		if len(got.Endpoints) != 1 || got.Endpoints[0].Addresses[0] != "10.42.0.2" {
			t.Errorf("endpoints = %+v", got.Endpoints)
		}
	})
	t.Run("a service without selector loses our slices but keeps user slices", func(t *testing.T) {
		fx := newFixture(t, 0, service(func(s *corev1.Service) { s.Spec.Selector = nil }), old.DeepCopy(), foreign.DeepCopy())
		fx.sync(t)
		sl := fx.slices(t)
		if len(sl) != 1 || sl[0].Name != "web-manual" {
			t.Errorf("slices = %v, want only the user's", sl)
		}
	})
	t.Run("a service being deleted gets no new slices, existing ones are still kept current", func(t *testing.T) {
		dying := func(s *corev1.Service) { ts := metav1.Now(); s.DeletionTimestamp = &ts }
		fx := newFixture(t, 0, service(dying), pod("a", "10.42.0.2"))
		fx.sync(t)
		if acts := controllertest.Filter(fx.client.Actions(), "create", "endpointslices"); len(acts) != 0 {
			t.Errorf("created slices for a terminating service: %v", acts)
		}
		fx = newFixture(t, 0, service(dying), pod("a", "10.42.0.2"), old.DeepCopy())
		fx.sync(t)
		if acts := controllertest.Filter(fx.client.Actions(), "create", "endpointslices"); len(acts) != 0 {
			t.Errorf("created slices for a terminating service: %v", acts)
		}
		got, _ := fx.client.DiscoveryV1().EndpointSlices("ns").Get(context.Background(), "web-abc", metav1.GetOptions{})
		if len(got.Endpoints) != 1 || got.Endpoints[0].Addresses[0] != "10.42.0.2" {
			t.Errorf("endpoints = %+v, want the existing slice updated", got.Endpoints)
		}
	})
	t.Run("a deleted service loses its slices", func(t *testing.T) {
		fx := newFixture(t, 0, old.DeepCopy())
		fx.sync(t)
		if n := len(fx.slices(t)); n != 0 {
			t.Errorf("slices = %d, want 0", n)
		}
	})
	t.Run("headless and publishNotReadyAddresses", func(t *testing.T) {
		fx := newFixture(t, 0, service(func(s *corev1.Service) {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.PublishNotReadyAddresses = true
		}), pod("a", "10.42.0.2", notReady, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a", "web" }))
		fx.sync(t)
		s := fx.slices(t)[0]
		if _, ok := s.Labels[corev1.IsHeadlessService]; !ok {
			t.Errorf("labels = %v, want the headless label", s.Labels)
		}
		e := s.Endpoints[0]
		if !*e.Conditions.Ready || e.Hostname == nil || *e.Hostname != "a" {
			t.Errorf("endpoint = %+v", e)
		}
	})
}

func sameMultiset[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[T]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

// observe delivers the client's slices to the informer, as a watch would, so the next sync sees them.
func (fx *fixture) observe(t *testing.T) {
	t.Helper()
	inf := fx.f.Discovery().V1().EndpointSlices().Informer()
	seen := map[string]bool{}
	for _, s := range fx.slices(t) {
		s := s.DeepCopy()
		seen[s.Name] = true
		if old, ok, _ := inf.GetIndexer().Get(s); ok {
			if err := inf.GetIndexer().Update(s); err != nil {
				t.Fatal(err)
			}
			fx.c.onSliceUpdate(old, s)
			continue
		}
		controllertest.Load(t, inf, s)
		fx.c.onSliceAdd(s)
	}
	for _, o := range inf.GetIndexer().List() {
		if s := o.(*discoveryv1.EndpointSlice); !seen[s.Name] {
			if err := inf.GetIndexer().Delete(s); err != nil {
				t.Fatal(err)
			}
			fx.c.onSliceDelete(s)
		}
	}
	fx.client.ClearActions()
}

// setPods replaces the pods the informer holds.
func (fx *fixture) setPods(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	inf := fx.f.Core().V1().Pods().Informer()
	for _, o := range inf.GetIndexer().List() {
		if err := inf.GetIndexer().Delete(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		controllertest.Load(t, inf, p)
	}
}

// placement maps each pod to the slice that lists it.
func (fx *fixture) placement(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range fx.slices(t) {
		for _, e := range s.Endpoints {
			if prev, ok := out[e.TargetRef.Name]; ok {
				t.Errorf("pod %s in slices %s and %s", e.TargetRef.Name, prev, s.Name)
			}
			out[e.TargetRef.Name] = s.Name
		}
	}
	return out
}

func podRange(from, to int, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < to; i++ {
		out = append(out, pod(fmt.Sprintf("p%03d", i), fmt.Sprintf("10.42.%d.%d", i/200, i%200+2), opts...))
	}
	return out
}

func writes(fx *fixture) (creates, updates, deletes []string) {
	for _, a := range controllertest.Filter(fx.client.Actions(), "", "endpointslices") {
		switch a.GetVerb() {
		case "create":
			creates = append(creates, a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice).GenerateName)
		case "update":
			updates = append(updates, a.(k8stesting.UpdateAction).GetObject().(*discoveryv1.EndpointSlice).Name)
		case "delete":
			deletes = append(deletes, a.(k8stesting.DeleteAction).GetName())
		}
	}
	return
}

// Endpoints stay in the slice that holds them: a change writes only the slices it touches, and
// nothing moves between slices.
func TestEndpointsStayInTheirSlices(t *testing.T) {
	objs := []runtime.Object{service()}
	for _, p := range podRange(0, 250) {
		objs = append(objs, p)
	}
	fx := newFixture(t, 0, objs...)
	fx.sync(t)
	fx.observe(t)
	before := fx.placement(t)
	if len(before) != 250 || len(fx.slices(t)) != 3 {
		t.Fatalf("%d endpoints in %d slices, want 250 in 3", len(before), len(fx.slices(t)))
	}
	unchangedBut := func(t *testing.T, after map[string]string, skip ...string) {
		t.Helper()
		for name, s := range before {
			if slices.Contains(skip, name) {
				continue
			}
			if after[name] != s {
				t.Errorf("pod %s moved from %s to %q", name, s, after[name])
			}
		}
	}
	all := podRange(0, 250)

	// One pod turns not ready: only its slice is written.
	changed := slices.Clone(all)
	changed[120] = pod("p120", all[120].Status.PodIP, notReady)
	fx.setPods(t, changed...)
	fx.sync(t)
	c, u, d := writes(fx)
	if len(c) != 0 || len(d) != 0 || !slices.Equal(u, []string{before["p120"]}) {
		t.Errorf("creates %v, updates %v, deletes %v; want only %s updated", c, u, d, before["p120"])
	}
	after := fx.placement(t)
	unchangedBut(t, after)
	fx.observe(t)

	// A pod goes and another comes: the newcomer takes the free place in the slice being updated.
	next := slices.Clone(changed)
	next = slices.Delete(next, 10, 11) // p010
	next = append(next, podRange(250, 251)...)
	fx.setPods(t, next...)
	fx.sync(t)
	c, u, d = writes(fx)
	if len(c) != 0 || len(d) != 0 || !slices.Equal(u, []string{before["p010"]}) {
		t.Errorf("creates %v, updates %v, deletes %v; want only %s updated", c, u, d, before["p010"])
	}
	after = fx.placement(t)
	unchangedBut(t, after, "p010")
	if _, ok := after["p010"]; ok || after["p250"] != before["p010"] {
		t.Errorf("p010 in %q, p250 in %q; want p250 in %s, p010 gone", after["p010"], after["p250"], before["p010"])
	}
	fx.observe(t)

	// New pods, none of the slices changing: they fill the fullest slice they fit in.
	next = append(next, podRange(251, 261)...)
	fx.setPods(t, next...)
	fx.sync(t)
	c, u, d = writes(fx)
	small := before["p249"] // the slice of 50
	if len(c) != 0 || len(d) != 0 || !slices.Equal(u, []string{small}) {
		t.Errorf("creates %v, updates %v, deletes %v; want only %s updated", c, u, d, small)
	}
	after = fx.placement(t)
	unchangedBut(t, after, "p010")
	for i := 251; i < 261; i++ {
		if n := fmt.Sprintf("p%03d", i); after[n] != small {
			t.Errorf("%s in %q, want %s", n, after[n], small)
		}
	}
	fx.observe(t)

	// Every pod of one slice goes: that slice is deleted, the others stay as they are.
	gone := before["p000"]
	var keep []*corev1.Pod
	for _, p := range next {
		if after[p.Name] != gone {
			keep = append(keep, p)
		}
	}
	fx.setPods(t, keep...)
	fx.sync(t)
	c, u, d = writes(fx)
	if len(c) != 0 || len(u) != 0 || !slices.Equal(d, []string{gone}) {
		t.Errorf("creates %v, updates %v, deletes %v; want only %s deleted", c, u, d, gone)
	}
	fx.observe(t)
	last := fx.placement(t)
	for name, s := range last {
		if after[name] != s {
			t.Errorf("pod %s moved from %s to %s", name, after[name], s)
		}
	}

	// All pods go: the last slice becomes the empty placeholder in place, and stays.
	fx.setPods(t)
	fx.sync(t)
	c, u, d = writes(fx)
	if len(c) != 0 || len(u) != 1 || len(d) != 1 {
		t.Errorf("creates %v, updates %v, deletes %v; want one slice deleted, one emptied", c, u, d)
	}
	fx.observe(t)
	if sl := fx.slices(t); len(sl) != 1 || len(sl[0].Endpoints) != 0 || len(sl[0].Ports) != 0 {
		t.Fatalf("slices = %+v, want one empty placeholder", sl)
	}
	fx.sync(t)
	if c, u, d = writes(fx); len(c)+len(u)+len(d) != 0 {
		t.Errorf("creates %v, updates %v, deletes %v on an up-to-date placeholder", c, u, d)
	}
}

// A slice of an earlier Service of the same name (another uid) is not taken over.
func TestSliceOfAnEarlierServiceIsReplaced(t *testing.T) {
	yes := true
	old := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "ns", UID: "uid-old-slice",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName, "team": "a"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "uid-old-svc", Controller: &yes, BlockOwnerDeletion: &yes}}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"), old)
	fx.sync(t)
	c, u, d := writes(fx)
	if len(c) != 1 || len(u) != 0 || !slices.Equal(d, []string{"web-old"}) {
		t.Errorf("creates %v, updates %v, deletes %v; want a new slice and web-old deleted", c, u, d)
	}
}

// A Service without endpoints keeps its placeholder untouched while a slice of another family goes.
func TestPlaceholderKept(t *testing.T) {
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "uid-svc", Controller: &yes, BlockOwnerDeletion: &yes}}
	lbls := map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName, "team": "a"}
	placeholder := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-empty", Namespace: "ns", UID: "uid-empty", Labels: lbls, OwnerReferences: owner},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	v6 := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-v6", Namespace: "ns", UID: "uid-v6", Labels: lbls, OwnerReferences: owner},
		AddressType: discoveryv1.AddressTypeIPv6,
	}
	fx := newFixture(t, 0, service(), placeholder, v6)
	fx.sync(t)
	if c, u, d := writes(fx); len(c) != 0 || len(u) != 0 || !slices.Equal(d, []string{"web-v6"}) {
		t.Errorf("creates %v, updates %v, deletes %v; want only web-v6 deleted", c, u, d)
	}
}

// A slice being deleted is left alone; its endpoints go to another slice.
func TestSliceBeingDeletedIsLeftAlone(t *testing.T) {
	fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"), pod("b", "10.42.0.3"))
	fx.sync(t)
	fx.observe(t)
	s := fx.slices(t)[0]
	now := metav1.Now()
	s.DeletionTimestamp, s.Finalizers = &now, []string{"example.com/hold"}
	if _, err := fx.client.DiscoveryV1().EndpointSlices("ns").Update(context.Background(), &s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.observe(t)
	fx.sync(t)
	c, u, d := writes(fx)
	if len(c) != 1 || len(u) != 0 || len(d) != 0 {
		t.Errorf("creates %v, updates %v, deletes %v; want one new slice and %s left alone", c, u, d, s.Name)
	}
	for _, sl := range fx.slices(t) {
		if sl.Name != s.Name && len(sl.Endpoints) != 2 {
			t.Errorf("new slice %s holds %d endpoints, want a and b", sl.Name, len(sl.Endpoints))
		}
	}
}

// Endpoints carry their node's zone; a pod whose Node is unknown is left out and the Service tried
// again, unless the Service publishes not-ready addresses.
func TestZoneAndMissingNodes(t *testing.T) {
	onNode := func(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
	objs := []runtime.Object{node("nozone", ""),
		pod("a", "10.42.0.2"), pod("b", "10.42.0.3", onNode("nozone")), pod("c", "10.42.0.4", onNode("gone"))}

	fx := newFixture(t, 0, append([]runtime.Object{service()}, objs...)...)
	err := fx.c.sync(context.Background(), "ns/web")
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("sync error = %v, want one naming the missing node, so the Service is retried", err)
	}
	eps := byName(fx.slices(t)[0])
	if len(eps) != 2 {
		t.Fatalf("endpoints = %v, want a and b, not c (node gone)", eps)
	}
	if z := eps["a"].Zone; z == nil || *z != "zone-a" {
		t.Errorf("a: zone = %v, want zone-a", z)
	}
	if z, n := eps["b"].Zone, eps["b"].NodeName; z != nil || n == nil || *n != "nozone" {
		t.Errorf("b: zone = %v, node = %v; want no zone on node nozone", z, n)
	}
	if ev := <-fx.c.recorder.(*record.FakeRecorder).Events; !strings.Contains(ev, "FailedToUpdateEndpointSlices") {
		t.Errorf("event = %q", ev)
	}

	// The node shows up: the next sync lists the pod, with its zone.
	fx.observe(t)
	controllertest.Load(t, fx.f.Core().V1().Nodes().Informer(), node("gone", "zone-b"))
	fx.sync(t)
	if z := byName(fx.slices(t)[0])["c"].Zone; z == nil || *z != "zone-b" {
		t.Errorf("c: zone = %v, want zone-b once its node exists", z)
	}

	fx = newFixture(t, 0, append([]runtime.Object{service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })}, objs...)...)
	fx.sync(t)
	eps = byName(fx.slices(t)[0])
	if c, ok := eps["c"]; !ok || c.Zone != nil || c.NodeName == nil || *c.NodeName != "gone" {
		t.Errorf("endpoints = %v, want c listed without zone (publishNotReadyAddresses)", eps)
	}
}

// The slices written carry endpoints.kubernetes.io/last-change-trigger-time as Kubernetes computes it:
// the Service's creation on its first sync, then the earliest trigger (a pod's Ready transition) that
// moved since the last sync, or none.
func TestLastChangeTriggerTime(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	readyAt := func(at time.Time) podOpt {
		return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at) }
	}
	svc := service(func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(created) })
	t0 := created.Add(time.Minute)
	objs := []runtime.Object{svc}
	for _, p := range podRange(0, 3, readyAt(t0)) {
		objs = append(objs, p)
	}
	fx := newFixture(t, 2, objs...)
	annotation := func(name string) (string, bool) {
		t.Helper()
		s, err := fx.client.DiscoveryV1().EndpointSlices("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := s.Annotations[corev1.EndpointsLastChangeTriggerTime]
		return v, ok
	}

	fx.sync(t)
	fx.observe(t)
	at := fx.placement(t)
	for _, name := range []string{at["p000"], at["p002"]} {
		if v, _ := annotation(name); v != created.Format(time.RFC3339Nano) {
			t.Errorf("%s: trigger time %q, want the Service's creation %s", name, v, created.Format(time.RFC3339Nano))
		}
	}

	// p000 turns not ready at t1, p001 at t2: the slice they share gets the earlier, t1; the other
	// slice is not written and keeps its annotation.
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	pods := podRange(0, 3, readyAt(t0))
	pods[0] = pod("p000", pods[0].Status.PodIP, notReady, readyAt(t1))
	pods[1] = pod("p001", pods[1].Status.PodIP, notReady, readyAt(t2))
	fx.setPods(t, pods...)
	fx.sync(t)
	if v, _ := annotation(at["p000"]); v != t1.Format(time.RFC3339Nano) {
		t.Errorf("trigger time %q, want %s", v, t1.Format(time.RFC3339Nano))
	}
	if v, _ := annotation(at["p002"]); v != created.Format(time.RFC3339Nano) {
		t.Errorf("unwritten slice: trigger time %q, want it kept", v)
	}
	fx.observe(t)

	// A pod goes, nothing moved forward: the slice written loses the annotation.
	fx.setPods(t, pods[0], pods[2])
	fx.sync(t)
	if v, ok := annotation(at["p000"]); ok {
		t.Errorf("trigger time %q after a change with no trigger, want none", v)
	}
}

// A dual-stack Service gets slices of each family in spec.ipFamilies, each listing the pods' IPs of
// that family; a family the Service drops loses its slices.
func TestDualStack(t *testing.T) {
	dual := func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	}
	ips := func(ips ...string) podOpt {
		return func(p *corev1.Pod) {
			p.Status.PodIPs = nil
			for _, ip := range ips {
				p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
			}
		}
	}
	fx := newFixture(t, 0, service(dual),
		pod("both", "fd00::2", ips("fd00::2", "10.42.0.2")),
		pod("v4", "10.42.0.3", ips("10.42.0.3")),
	)
	fx.sync(t)
	got := map[discoveryv1.AddressType]map[string]string{}
	for _, s := range fx.slices(t) {
		if got[s.AddressType] != nil {
			t.Errorf("two %s slices", s.AddressType)
		}
		got[s.AddressType] = map[string]string{}
		for name, e := range byName(s) {
			got[s.AddressType][name] = strings.Join(e.Addresses, ",")
		}
	}
	want := map[discoveryv1.AddressType]map[string]string{
		discoveryv1.AddressTypeIPv6: {"both": "fd00::2"},
		discoveryv1.AddressTypeIPv4: {"both": "10.42.0.2", "v4": "10.42.0.3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("endpoints by family = %v, want %v", got, want)
	}

	// The Service becomes single-stack IPv4: its IPv6 slice goes, the IPv4 one is left as it is.
	fx.observe(t)
	controllertest.Load(t, fx.f.Core().V1().Services().Informer(), service(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}))
	fx.sync(t)
	c, u, d := writes(fx)
	if len(c) != 0 || len(u) != 0 || len(d) != 1 {
		t.Errorf("creates %v, updates %v, deletes %v; want the IPv6 slice deleted", c, u, d)
	}
	if sl := fx.slices(t); len(sl) != 1 || sl[0].AddressType != discoveryv1.AddressTypeIPv4 || len(sl[0].Endpoints) != 2 {
		t.Errorf("slices = %v, want only the IPv4 slice with both pods", sl)
	}
}

// A family without endpoints gets its own placeholder; a Service without ipFamilies takes its
// cluster IP's family, or both when headless, as Kubernetes does.
func TestAddressTypes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		families  []corev1.IPFamily
		clusterIP string
		want      []discoveryv1.AddressType
	}{
		{"ipFamilies in order", []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}, "fd00::10", []discoveryv1.AddressType{"IPv6", "IPv4"}},
		{"single IPv6", []corev1.IPFamily{corev1.IPv6Protocol}, "fd00::10", []discoveryv1.AddressType{"IPv6"}},
		{"no ipFamilies, IPv6 cluster IP", nil, "fd00::10", []discoveryv1.AddressType{"IPv6"}},
		{"no ipFamilies, IPv4 cluster IP", nil, "10.43.0.10", []discoveryv1.AddressType{"IPv4"}},
		{"no ipFamilies, headless", nil, corev1.ClusterIPNone, []discoveryv1.AddressType{"IPv4", "IPv6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(func(s *corev1.Service) { s.Spec.IPFamilies, s.Spec.ClusterIP = tc.families, tc.clusterIP })
			if got := addressTypes(svc); !slices.Equal(got, tc.want) {
				t.Errorf("addressTypes = %v, want %v", got, tc.want)
			}
		})
	}

	fx := newFixture(t, 0, service(func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	}), pod("v4", "10.42.0.3"))
	fx.sync(t)
	got := map[discoveryv1.AddressType]int{}
	for _, s := range fx.slices(t) {
		got[s.AddressType] = len(s.Endpoints)
	}
	if len(got) != 2 || got[discoveryv1.AddressTypeIPv4] != 1 || got[discoveryv1.AddressTypeIPv6] != 0 {
		t.Errorf("endpoints by family = %v, want one IPv4 endpoint and an empty IPv6 placeholder", got)
	}
}

// queued drains the controller's queue.
func (fx *fixture) queued() []string {
	var out []string
	for fx.c.queue.Len() > 0 {
		k, _ := fx.c.queue.Get()
		fx.c.queue.Done(k)
		fx.c.queue.Forget(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// As Kubernetes' EndpointSliceTracker: the events of the controller's own writes do not queue the
// Service again; those of others' writes to its slices do.
func TestOwnSliceWritesDoNotRequeue(t *testing.T) {
	fx := newFixture(t, 1, service(), pod("a", "10.42.0.2"), pod("b", "10.42.0.3"))
	fx.sync(t)
	fx.observe(t) // our two creations
	if q := fx.queued(); len(q) != 0 {
		t.Errorf("queued %v after the controller's own creations, want nothing", q)
	}
	fx.setPods(t, pod("a", "10.42.0.2", notReady), pod("b", "10.42.0.3"))
	fx.sync(t)
	fx.observe(t) // our update
	if q := fx.queued(); len(q) != 0 {
		t.Errorf("queued %v after the controller's own update, want nothing", q)
	}
	fx.setPods(t, pod("a", "10.42.0.2", notReady))
	fx.sync(t)
	fx.observe(t) // our deletion
	if q := fx.queued(); len(q) != 0 {
		t.Errorf("queued %v after the controller's own deletion, want nothing", q)
	}

	// Someone else edits the slice (a newer generation), then deletes it.
	s := fx.slices(t)[0]
	inf := fx.f.Discovery().V1().EndpointSlices().Informer()
	edited := s.DeepCopy()
	edited.Generation++
	edited.Endpoints = nil
	fx.c.onSliceUpdate(&s, edited)
	if q := fx.queued(); !slices.Equal(q, []string{"ns/web"}) {
		t.Errorf("queued %v after another's edit, want ns/web", q)
	}
	relabelled := edited.DeepCopy()
	relabelled.Labels[discoveryv1.LabelServiceName] = "api"
	fx.c.onSliceUpdate(edited, relabelled)
	if q := fx.queued(); !slices.Equal(q, []string{"ns/api", "ns/web"}) {
		t.Errorf("queued %v after a slice moved to another Service, want both", q)
	}
	if err := inf.GetIndexer().Delete(&s); err != nil {
		t.Fatal(err)
	}
	fx.c.onSliceDelete(cache.DeletedFinalStateUnknown{Key: "ns/" + s.Name, Obj: &s})
	if q := fx.queued(); !slices.Equal(q, []string{"ns/web"}) {
		t.Errorf("queued %v after another's deletion, want ns/web", q)
	}
}

// A slice of ours this process never wrote (one written before a restart) that someone else
// deletes queues its Service, so its endpoints come back at once; Kubernetes' tracker would not
// (see onSliceDelete). Slices of other managers, or labelled for no Service, queue nothing.
func TestDeletingUnwrittenSliceQueuesItsService(t *testing.T) {
	ours := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "ns", UID: "uid-old", Generation: 1,
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	others := ours.DeepCopy()
	others.Labels[discoveryv1.LabelManagedBy] = "someone-else"
	unlabelled := ours.DeepCopy()
	delete(unlabelled.Labels, discoveryv1.LabelServiceName)
	fx := newFixture(t, 0, service())
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  []string
	}{
		{"ours", ours, []string{"ns/web"}},
		{"another manager's", others, nil},
		{"labelled for no Service", unlabelled, nil},
	} {
		fx.c.onSliceDelete(tc.slice)
		if q := fx.queued(); !slices.Equal(q, tc.want) {
			t.Errorf("%s: queued %v, want %v", tc.name, q, tc.want)
		}
	}
}

// As Kubernetes: a pod update queues the Services that select it only when its endpoint can change
// (deletion, readiness, IPs, finishing), and, when its labels change, the Services that start or
// stop selecting it (all of them if the endpoint changed too).
func TestPodUpdatesQueueOnlyEndpointChanges(t *testing.T) {
	web := service()
	api := service(func(s *corev1.Service) {
		s.Name, s.UID, s.Spec.Selector = "api", "uid-api", map[string]string{"tier": "api"}
	})
	all := service(func(s *corev1.Service) { s.Name, s.UID, s.Spec.Selector = "all", "uid-all", map[string]string{} })
	base := func(opts ...podOpt) *corev1.Pod {
		p := pod("a", "10.42.0.2", opts...)
		p.ResourceVersion = "1"
		return p
	}
	relabel := func(l map[string]string) podOpt { return func(p *corev1.Pod) { p.Labels = l } }
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	noAddress := func(p *corev1.Pod) { p.Status.Phase, p.Status.PodIP = corev1.PodPending, "" }
	for _, tc := range []struct {
		name string
		old  *corev1.Pod // base() if nil
		cur  *corev1.Pod
		want []string
	}{
		{"a resync", nil, base(), nil},
		{"a restart count", nil, base(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}}
		}), nil},
		{"an annotation", nil, base(func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }), nil},
		{"readiness", nil, base(notReady), []string{"ns/all", "ns/web"}},
		{"deletion", nil, base(terminating), []string{"ns/all", "ns/web"}},
		{"an IP", nil, base(func(p *corev1.Pod) { p.Status.PodIP = "10.42.0.9" }), []string{"ns/all", "ns/web"}},
		{"pod IPs", nil, base(func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.2"}, {IP: "fd00::2"}} }), []string{"ns/all", "ns/web"}},
		{"finished", nil, base(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), []string{"ns/all", "ns/web"}},
		{"labels only", nil, base(relabel(map[string]string{"tier": "api"})), []string{"ns/api", "ns/web"}},
		{"labels and readiness", nil, base(notReady, relabel(map[string]string{"tier": "api"})), []string{"ns/all", "ns/api", "ns/web"}},
		// A not-ready pod is listed (ready false) until it finishes; one without an address never is.
		{"finished while not ready", base(notReady), base(notReady, finished), []string{"ns/all", "ns/web"}},
		{"finished before it had an address", base(notReady, noAddress), base(notReady, noAddress, finished), nil},
		{"a finished pod deleted", base(notReady, finished), base(notReady, finished, terminating), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, 0, web, api, all)
			cur := tc.cur
			if tc.name != "a resync" {
				cur.ResourceVersion = "2"
			}
			old := tc.old
			if old == nil {
				old = base()
			}
			fx.c.onPodUpdate(old, cur)
			if q := fx.queued(); !slices.Equal(q, tc.want) {
				t.Errorf("queued %v, want %v", q, tc.want)
			}
		})
	}
}

// As Kubernetes' controller, any failed slice write (create, update or delete) is reported on the
// Service with one FailedToUpdateEndpointSlices warning, and the Service is retried.
func TestWriteFailuresAreReportedOnTheService(t *testing.T) {
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "uid-svc", Controller: &yes, BlockOwnerDeletion: &yes}}
	lbls := map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName, "team": "a"}
	v6 := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-v6", Namespace: "ns", UID: "uid-v6", Labels: lbls, OwnerReferences: owner},
		AddressType: discoveryv1.AddressTypeIPv6,
	}
	for _, tc := range []struct {
		verb string
		objs []runtime.Object
	}{
		{"create", []runtime.Object{service(), pod("a", "10.42.0.2")}},
		{"delete", []runtime.Object{service(), pod("a", "10.42.0.2"), v6}},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			fx := newFixture(t, 0, tc.objs...)
			fx.client.PrependReactor(tc.verb, "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("webhook said no")
			})
			if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
				t.Fatal("sync succeeded with a failing " + tc.verb)
			}
			events := controllertest.Events(fx.c.recorder.(*record.FakeRecorder).Events)
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning FailedToUpdateEndpointSlices Error updating Endpoint Slices for Service ns/web: ") ||
				!strings.Contains(events[0], "webhook said no") {
				t.Errorf("events %q, want one FailedToUpdateEndpointSlices warning with the error", events)
			}
		})
	}
	t.Run("update", func(t *testing.T) {
		fx := newFixture(t, 0, service(), pod("a", "10.42.0.2"))
		fx.sync(t)
		fx.observe(t)
		fx.client.PrependReactor("update", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("webhook said no")
		})
		fx.setPods(t, pod("a", "10.42.0.2", notReady))
		if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
			t.Fatal("sync succeeded with a failing update")
		}
		events := controllertest.Events(fx.c.recorder.(*record.FakeRecorder).Events)
		if len(events) != 1 || !strings.HasPrefix(events[0], "Warning FailedToUpdateEndpointSlices ") {
			t.Errorf("events %q, want one FailedToUpdateEndpointSlices warning", events)
		}
	})
}
