package endpointslicemirroring

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

type fixture struct {
	client   *fake.Clientset
	c        *Controller
	f        informers.SharedInformerFactory
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T, maxPer int, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(100)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Endpoints(), f.Discovery().V1().EndpointSlices(), rec,
		Options{MaxEndpointsPerSubset: maxPer})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Service:
			controllertest.Load(t, f.Core().V1().Services().Informer(), o)
		case *corev1.Endpoints:
			controllertest.Load(t, f.Core().V1().Endpoints().Informer(), o)
		case *discoveryv1.EndpointSlice:
			controllertest.Load(t, f.Discovery().V1().EndpointSlices().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, f: f, recorder: rec}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/db"); err != nil {
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
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-svc"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}},
	}
	for _, m := range mod {
		m(s)
	}
	return s
}

func withSelector(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "db"} }

func endpoints(mod ...func(*corev1.Endpoints)) *corev1.Endpoints {
	node := "node1"
	e := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-ep",
			Labels: map[string]string{"team": "data"},
			Annotations: map[string]string{"note": "external", corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z",
				corev1.LastAppliedConfigAnnotation: "{}"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{
				{IP: "192.0.2.10", Hostname: "primary", NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid-p"}},
				{IP: "2001:db8::10"},
			},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.11"}},
			Ports:             []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
	}
	for _, m := range mod {
		m(e)
	}
	return e
}

func byIP(s discoveryv1.EndpointSlice) map[string]discoveryv1.Endpoint {
	out := map[string]discoveryv1.Endpoint{}
	for _, e := range s.Endpoints {
		out[e.Addresses[0]] = e
	}
	return out
}

func sliceOf(t *testing.T, sl []discoveryv1.EndpointSlice, at discoveryv1.AddressType) discoveryv1.EndpointSlice {
	t.Helper()
	for _, s := range sl {
		if s.AddressType == at {
			return s
		}
	}
	t.Fatalf("no %s slice in %v", at, sl)
	return discoveryv1.EndpointSlice{}
}

// A selector-less Service's Endpoints become one slice per address family, labelled, annotated
// and owned as Kubernetes' mirroring controller does.
func TestMirrorsSelectorlessService(t *testing.T) {
	fx := newFixture(t, 0, service(), endpoints())
	fx.sync(t)
	sl := fx.slices(t)
	if len(sl) != 2 {
		t.Fatalf("slices = %d, want an IPv4 and an IPv6 one", len(sl))
	}
	for _, s := range sl {
		wantLabels := map[string]string{"team": "data", discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: ControllerName}
		if !mapsEqual(s.Labels, wantLabels) {
			t.Errorf("%s labels = %v, want %v", s.Name, s.Labels, wantLabels)
		}
		if !mapsEqual(s.Annotations, map[string]string{"note": "external"}) {
			t.Errorf("%s annotations = %v, want only note (no trigger time, no last-applied)", s.Name, s.Annotations)
		}
		ref := metav1.GetControllerOf(&s)
		if ref == nil || ref.Kind != "Endpoints" || ref.APIVersion != "v1" || ref.Name != "db" || ref.UID != "uid-ep" ||
			ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("%s owner = %+v, want the Endpoints as controller", s.Name, s.OwnerReferences)
		}
		if !strings.HasPrefix(s.Name, "db-") {
			t.Errorf("name %q, want generated from db-", s.Name)
		}
		if len(s.Ports) != 1 || *s.Ports[0].Name != "pg" || *s.Ports[0].Port != 5432 || *s.Ports[0].Protocol != corev1.ProtocolTCP {
			t.Errorf("%s ports = %+v", s.Name, s.Ports)
		}
	}
	v4 := byIP(sliceOf(t, sl, discoveryv1.AddressTypeIPv4))
	if len(v4) != 2 {
		t.Fatalf("IPv4 endpoints = %v", v4)
	}
	if e := v4["192.0.2.10"]; !*e.Conditions.Ready || e.Hostname == nil || *e.Hostname != "primary" || e.NodeName == nil ||
		*e.NodeName != "node1" || e.TargetRef == nil || e.TargetRef.UID != "uid-p" {
		t.Errorf("ready endpoint = %+v", e)
	}
	if e := v4["192.0.2.11"]; e.Conditions.Ready == nil || *e.Conditions.Ready {
		t.Errorf("not-ready address gave %+v, want ready=false", e.Conditions)
	}
	v6 := byIP(sliceOf(t, sl, discoveryv1.AddressTypeIPv6))
	if e, ok := v6["2001:db8::10"]; len(v6) != 1 || !ok || !*e.Conditions.Ready {
		t.Errorf("IPv6 endpoints = %v", v6)
	}
	if ev := controllertest.Events(fx.recorder.Events); len(ev) != 0 {
		t.Errorf("events = %v, want none", ev)
	}
}

// Mirrored slices go when the Endpoints must not be mirrored (any more); others' slices stay.
func TestNotMirrored(t *testing.T) {
	yes := true
	mirrored := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "db-abc", Namespace: "ns", UID: "uid-mirrored",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: ControllerName},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Endpoints", Name: "db", UID: "uid-ep", Controller: &yes, BlockOwnerDeletion: &yes}}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	foreign := mirrored.DeepCopy()
	foreign.Name, foreign.UID = "db-other", "uid-other"
	foreign.Labels = map[string]string{discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}
	manual := mirrored.DeepCopy()
	manual.Name, manual.UID, manual.Labels = "db-manual", "uid-manual", map[string]string{discoveryv1.LabelServiceName: "db"}

	for _, tc := range []struct {
		name string
		objs []runtime.Object
	}{
		{"the Service has a selector", []runtime.Object{service(withSelector), endpoints()}},
		{"no Service", []runtime.Object{endpoints()}},
		{"no Endpoints", []runtime.Object{service()}},
		{"skip-mirror label", []runtime.Object{service(), endpoints(func(e *corev1.Endpoints) {
			e.Labels[discoveryv1.LabelSkipMirror] = "true"
		})}},
		{"leader-election annotation", []runtime.Object{service(), endpoints(func(e *corev1.Endpoints) {
			e.Annotations["control-plane.alpha.kubernetes.io/leader"] = `{"holderIdentity":"x"}`
		})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(tc.objs, mirrored.DeepCopy(), foreign.DeepCopy(), manual.DeepCopy())
			fx := newFixture(t, 0, objs...)
			fx.sync(t)
			var names []string
			for _, s := range fx.slices(t) {
				names = append(names, s.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"db-manual", "db-other"}) {
				t.Errorf("slices = %v, want only the others' (db-manual, db-other)", names)
			}
		})
	}
	t.Run("a skip-mirror label that is not true mirrors", func(t *testing.T) {
		fx := newFixture(t, 0, service(), endpoints(func(e *corev1.Endpoints) { e.Labels[discoveryv1.LabelSkipMirror] = "false" }))
		fx.sync(t)
		if n := len(fx.slices(t)); n != 2 {
			t.Errorf("slices = %d, want 2", n)
		}
	})
}

// At most maxPer addresses of a subset are mirrored, ready ones first, with an event; addresses
// that are not IPs are left out with an event of their own.
func TestAddressesLeftOut(t *testing.T) {
	many := func(e *corev1.Endpoints) {
		e.Subsets = []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.3"}, {IP: "192.0.2.1"}, {IP: "192.0.2.2"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.4"}},
			Ports:             []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		}}
	}
	fx := newFixture(t, 2, service(), endpoints(many))
	fx.sync(t)
	sl := fx.slices(t)
	if len(sl) != 1 {
		t.Fatalf("slices = %d, want 1", len(sl))
	}
	got := byIP(sl[0])
	if len(got) != 2 || !*got["192.0.2.1"].Conditions.Ready || !*got["192.0.2.2"].Conditions.Ready {
		t.Errorf("endpoints = %v, want the first two ready addresses", got)
	}
	ev := controllertest.Events(fx.recorder.Events)
	if len(ev) != 1 || !strings.Contains(ev[0], TooManyAddressesToMirror) || !strings.Contains(ev[0], "A max of 2 addresses") ||
		!strings.Contains(ev[0], "2 addresses were skipped") {
		t.Errorf("events = %v, want one %s", ev, TooManyAddressesToMirror)
	}

	fx = newFixture(t, 0, service(), endpoints(func(e *corev1.Endpoints) {
		e.Subsets[0].Addresses = append(e.Subsets[0].Addresses, corev1.EndpointAddress{IP: "db.example.com"})
	}))
	fx.sync(t)
	if n := len(byIP(sliceOf(t, fx.slices(t), discoveryv1.AddressTypeIPv4))); n != 2 {
		t.Errorf("IPv4 endpoints = %d, want 2 (the name left out)", n)
	}
	ev = controllertest.Events(fx.recorder.Events)
	if len(ev) != 1 || !strings.Contains(ev[0], InvalidIPAddress) || !strings.Contains(ev[0], "Skipped 1 invalid IP addresses") {
		t.Errorf("events = %v, want one %s", ev, InvalidIPAddress)
	}
}

// A changed Endpoints updates its slice in place (a slice whose ports no longer exist is reused
// for the new ports); an unchanged one writes nothing.
func TestUpdatesInPlace(t *testing.T) {
	v4only := func(e *corev1.Endpoints) {
		e.Subsets[0].Addresses = e.Subsets[0].Addresses[:1]
		e.Subsets[0].NotReadyAddresses = nil
	}
	fx := newFixture(t, 0, service(), endpoints(v4only))
	fx.sync(t)
	sl := fx.slices(t)
	if len(sl) != 1 {
		t.Fatalf("slices = %d, want 1", len(sl))
	}
	name := sl[0].Name

	// The informer delivers the slice; the Endpoints change address, labels and port.
	fx2 := newFixture(t, 0, service(), endpoints(v4only, func(e *corev1.Endpoints) {
		e.Subsets[0].Addresses[0].IP = "192.0.2.20"
		e.Subsets[0].Ports[0].Port = 6432
		e.Labels["tier"] = "gold"
	}), &sl[0])
	fx2.sync(t)
	if n := len(controllertest.Filter(fx2.client.Actions(), "create", "endpointslices")) +
		len(controllertest.Filter(fx2.client.Actions(), "delete", "endpointslices")); n != 0 {
		t.Errorf("%d creates and deletes, want one update in place: %v", n, fx2.client.Actions())
	}
	got := fx2.slices(t)
	if len(got) != 1 || got[0].Name != name {
		t.Fatalf("slices = %v, want %s updated", got, name)
	}
	if e := got[0].Endpoints; len(e) != 1 || e[0].Addresses[0] != "192.0.2.20" || *got[0].Ports[0].Port != 6432 || got[0].Labels["tier"] != "gold" {
		t.Errorf("updated slice = %+v", got[0])
	}

	// Up to date: nothing to write.
	fx3 := newFixture(t, 0, service(), endpoints(v4only), &sl[0])
	fx3.sync(t)
	if acts := controllertest.Filter(fx3.client.Actions(), "", "endpointslices"); len(acts) != 0 {
		t.Errorf("writes on an up-to-date slice: %v", acts)
	}
}

// Syncing again before the informer has delivered the created slices does not create them twice.
func TestStaleCacheDoesNotDuplicate(t *testing.T) {
	fx := newFixture(t, 0, service(), endpoints())
	fx.sync(t)
	if err := fx.c.sync(context.Background(), "ns/db"); err == nil {
		t.Error("a sync against a cache missing the created slices succeeded, want it retried")
	}
	if n := len(fx.slices(t)); n != 2 {
		t.Fatalf("slices = %d after two syncs with a stale cache, want 2", n)
	}
	for _, s := range fx.slices(t) {
		controllertest.Load(t, fx.f.Discovery().V1().EndpointSlices().Informer(), &s)
	}
	fx.client.ClearActions()
	fx.sync(t)
	if acts := controllertest.Filter(fx.client.Actions(), "", "endpointslices"); len(acts) != 0 {
		t.Errorf("writes once the cache caught up: %v", acts)
	}
}

// Repacking: an address listed twice is mirrored once, not-ready when listed so anywhere.
func TestRepackedBeforeMirroring(t *testing.T) {
	port := []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}
	fx := newFixture(t, 0, service(), endpoints(func(e *corev1.Endpoints) {
		e.Subsets = []corev1.EndpointSubset{
			{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.2"}}, Ports: port},
			{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}, {IP: "192.0.2.2"}}, Ports: port},
		}
	}))
	fx.sync(t)
	sl := fx.slices(t)
	if len(sl) != 1 {
		t.Fatalf("slices = %d, want 1", len(sl))
	}
	got := byIP(sl[0])
	if len(got) != 2 || !*got["192.0.2.1"].Conditions.Ready || *got["192.0.2.2"].Conditions.Ready {
		t.Errorf("endpoints = %+v, want .1 ready and .2 not ready", sl[0].Endpoints)
	}
}

// The informer handlers queue what Kubernetes' do.
func TestEventHandlers(t *testing.T) {
	fx := newFixture(t, 0)
	drain := func() []string {
		var keys []string
		for fx.c.queue.Len() > 0 {
			k, _ := fx.c.queue.Get()
			fx.c.queue.Done(k)
			fx.c.queue.Forget(k)
			keys = append(keys, k)
		}
		return keys
	}
	fx.c.onService(nil, service(withSelector))
	fx.c.onService(service(withSelector), service(withSelector, func(s *corev1.Service) { s.Labels = map[string]string{"a": "b"} }))
	if k := drain(); len(k) != 0 {
		t.Errorf("a Service with a selector queued %v", k)
	}
	fx.c.onService(service(withSelector), service())
	if k := drain(); !slices.Equal(k, []string{"ns/db"}) {
		t.Errorf("a Service losing its selector queued %v", k)
	}
	skip := endpoints(func(e *corev1.Endpoints) { e.Labels[discoveryv1.LabelSkipMirror] = "true" })
	fx.c.onEndpoints(nil, skip)
	if k := drain(); len(k) != 0 {
		t.Errorf("skip-mirror Endpoints queued %v", k)
	}
	fx.c.onEndpoints(endpoints(), skip)
	if k := drain(); !slices.Equal(k, []string{"ns/db"}) {
		t.Errorf("Endpoints becoming skip-mirror queued %v", k)
	}

	// The slices it wrote do not wake it; someone else's change to them does.
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "ns", UID: "u1", Generation: 1,
		Labels: map[string]string{discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: ControllerName}}}
	fx.c.tracker.wrote(s)
	fx.c.onSliceAdd(s)
	if k := drain(); len(k) != 0 {
		t.Errorf("its own slice queued %v", k)
	}
	edited := s.DeepCopy()
	edited.Generation = 2
	fx.c.onSliceUpdate(s, edited)
	if k := drain(); !slices.Equal(k, []string{"ns/db"}) {
		t.Errorf("an edited slice queued %v", k)
	}
	fx.c.onSliceDelete(edited)
	if k := drain(); !slices.Equal(k, []string{"ns/db"}) {
		t.Errorf("a slice deleted by someone else queued %v", k)
	}
	fx.c.tracker.expectDeletion(s)
	fx.c.onSliceDelete(s)
	if k := drain(); len(k) != 0 {
		t.Errorf("a slice it deleted queued %v", k)
	}
	other := s.DeepCopy()
	other.Labels[discoveryv1.LabelManagedBy] = "someone"
	other.UID = "u2"
	fx.c.onSliceAdd(other)
	if k := drain(); len(k) != 0 {
		t.Errorf("someone else's slice queued %v", k)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A slice this controller created that its cache never shows (created and
// deleted again while the informer relisted) holds the Service back only for
// staleLimit, not until a restart.
func TestUnseenWriteStopsCountingAfterTheLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := newTracker(func() time.Time { return now })
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "ns", UID: "u1", Generation: 1,
		Labels: map[string]string{discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: ControllerName}}}
	tr.wrote(s)
	if !tr.stale("ns/db", nil) {
		t.Fatal("a slice just created and not yet cached: not stale")
	}
	now = now.Add(staleLimit - time.Second)
	if !tr.stale("ns/db", nil) {
		t.Fatal("just under the limit: not stale")
	}
	now = now.Add(2 * time.Second)
	if tr.stale("ns/db", nil) {
		t.Fatal("past the limit: still stale")
	}
	// The record is gone, not just ignored.
	if tr.stale("ns/db", nil) {
		t.Fatal("stale again")
	}
}
