package endpointslice

import (
	"context"
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
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	f      informers.SharedInformerFactory
}

func newFixture(t *testing.T, maxPer int, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Discovery().V1().EndpointSlices(), record.NewFakeRecorder(100), Options{MaxEndpointsPerSlice: maxPer})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Service:
			controllertest.Load(t, f.Core().V1().Services().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
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
	fx.sync(t) // the informer has not delivered the created slice yet
	if n := len(fx.slices(t)); n != 1 {
		t.Fatalf("slices = %d after two syncs with a stale cache, want 1", n)
	}
	// Delivering it satisfies the expectation; a further sync changes nothing.
	s := fx.slices(t)[0]
	controllertest.Load(t, fx.f.Discovery().V1().EndpointSlices().Informer(), &s)
	fx.c.onSlice(&s, "add")
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
