package endpoints

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func newFixture(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), record.NewFakeRecorder(100), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Service:
			controllertest.Load(t, f.Core().V1().Services().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.Endpoints:
			controllertest.Load(t, f.Core().V1().Endpoints().Informer(), o)
		}
	}
	client.ClearActions()
	return c, client
}

func service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-svc"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.43.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
}

func pod(name, ip string, port int32, ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port}}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ips(a []corev1.EndpointAddress) []string {
	var out []string
	for _, x := range a {
		out = append(out, x.IP)
	}
	return out
}

func TestSubsets(t *testing.T) {
	dying := func(p *corev1.Pod) { ts := metav1.NewTime(time.Now()); p.DeletionTimestamp = &ts }
	tests := []struct {
		name      string
		publish   bool
		pods      []*corev1.Pod
		want      [][2][]string // per subset: ready IPs, not-ready IPs
		wantPorts []int32
	}{
		{"ready and not-ready pods share a subset", false, []*corev1.Pod{
			pod("b", "10.42.0.3", 8080, true), pod("a", "10.42.0.2", 8080, true), pod("c", "10.42.0.4", 8080, false),
		}, [][2][]string{{{"10.42.0.2", "10.42.0.3"}, {"10.42.0.4"}}}, []int32{8080}},
		{"different named port numbers make different subsets", false, []*corev1.Pod{
			pod("a", "10.42.0.2", 8080, true), pod("b", "10.42.0.3", 9090, true),
		}, [][2][]string{{{"10.42.0.2"}, nil}, {{"10.42.0.3"}, nil}}, []int32{8080, 9090}},
		{"terminating and finished pods are left out", false, []*corev1.Pod{
			pod("a", "10.42.0.2", 8080, true, dying), pod("b", "10.42.0.3", 8080, true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			pod("c", "", 8080, true),
		}, nil, nil},
		{"publishNotReadyAddresses lists every pod as ready", true, []*corev1.Pod{
			pod("a", "10.42.0.2", 8080, false), pod("b", "10.42.0.3", 8080, true, dying),
		}, [][2][]string{{{"10.42.0.2", "10.42.0.3"}, nil}}, []int32{8080}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := service()
			svc.Spec.PublishNotReadyAddresses = tc.publish
			got := Subsets(svc, tc.pods)
			if len(got) != len(tc.want) {
				t.Fatalf("subsets = %+v, want %d", got, len(tc.want))
			}
			for i, s := range got {
				if r, n := ips(s.Addresses), ips(s.NotReadyAddresses); !equal(r, tc.want[i][0]) || !equal(n, tc.want[i][1]) {
					t.Errorf("subset %d: ready %v notReady %v, want %v", i, r, n, tc.want[i])
				}
				if s.Ports[0].Port != tc.wantPorts[i] || s.Ports[0].Name != "http" {
					t.Errorf("subset %d ports = %+v", i, s.Ports)
				}
			}
		})
	}
}

func TestSyncCreatesUpdatesDeletes(t *testing.T) {
	ctx := context.Background()
	c, client := newFixture(t, service(), pod("a", "10.42.0.2", 8080, true))
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	ep, err := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].TargetRef.Name != "a" {
		t.Fatalf("endpoints = %+v, %v", ep, err)
	}

	stale := ep.DeepCopy()
	stale.Subsets = nil
	c, client = newFixture(t, service(), pod("a", "10.42.0.2", 8080, true), stale)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(controllertest.Filter(client.Actions(), "update", "endpoints")); n != 1 {
		t.Errorf("updates = %d, want 1", n)
	}
	client.ClearActions()
	c2, client2 := newFixture(t, service(), pod("a", "10.42.0.2", 8080, true), ep)
	if err := c2.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if acts := controllertest.Filter(client2.Actions(), "", "endpoints"); len(acts) != 0 {
		t.Errorf("writes on up-to-date endpoints: %v", acts)
	}

	c3, client3 := newFixture(t, ep)
	if err := c3.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := client3.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("endpoints of a deleted service kept")
	}
}

func TestExternalNameGetsNoEndpoints(t *testing.T) {
	svc := service()
	svc.Spec.Type, svc.Spec.ExternalName, svc.Spec.ClusterIP = corev1.ServiceTypeExternalName, "db.example.com", ""
	c, client := newFixture(t, svc, pod("a", "10.42.0.2", 8080, true))
	if err := c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if acts := controllertest.Filter(client.Actions(), "", "endpoints"); len(acts) != 0 {
		t.Errorf("writes for an ExternalName service: %v", acts)
	}
}

// started builds the controller on informers that run, so their event handlers fire.
func started(t *testing.T, objs ...runtime.Object) (context.Context, *Controller, *fake.Clientset) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), record.NewFakeRecorder(100), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.WaitForCacheSync(ctx.Done())
	controllertest.WaitForWatches(t, client, "services", "pods", "endpoints")
	return ctx, c, client
}

func endpoints(name string, annotations map[string]string) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: annotations},
		Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}}, Ports: []corev1.EndpointPort{{Port: 5432}}}},
	}
}

func selectorless(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.43.0.20", Ports: []corev1.ServicePort{{Port: 5432}}},
	}
}

func TestEditedEndpointsWithoutServiceAreNotQueued(t *testing.T) {
	ctx, c, client := started(t, endpoints("manual", nil), endpoints("sentinel", nil))
	manual, err := client.CoreV1().Endpoints("ns").Get(ctx, "manual", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manual.Labels = map[string]string{"edited": "yes"}
	if _, err := client.CoreV1().Endpoints("ns").Update(ctx, manual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer hands both events to the controller in order: once the deletion is queued, the
	// edit has been seen.
	if err := client.CoreV1().Endpoints("ns").Delete(ctx, "sentinel", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the deleted endpoints were never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if key, _ := c.queue.Get(); key != "ns/sentinel" {
		t.Errorf("queued %q first, want only the deleted ns/sentinel: an edit must not queue an Endpoints object", key)
	}
}

func TestLeftoverEndpoints(t *testing.T) {
	ctx := context.Background()
	lock := endpoints("lock", map[string]string{"control-plane.alpha.kubernetes.io/leader": `{"holderIdentity":"a"}`})
	c, client := newFixture(t, selectorless("plain"), endpoints("plain", nil), endpoints("gone", nil), lock)
	c.queueLeftovers()
	var keys []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		keys = append(keys, k)
		if err := c.sync(ctx, k); err != nil {
			t.Fatal(err)
		}
		c.queue.Done(k)
	}
	if want := []string{"ns/gone", "ns/plain"}; !sameSet(keys, want) {
		t.Errorf("queued %v, want %v (not the leader-election record)", keys, want)
	}
	for name, kept := range map[string]bool{"plain": true, "lock": true, "gone": false} {
		_, err := client.CoreV1().Endpoints("ns").Get(ctx, name, metav1.GetOptions{})
		if kept && err != nil {
			t.Errorf("endpoints %s: %v, want kept", name, err)
		}
		if !kept && err == nil {
			t.Errorf("endpoints %s kept, want deleted", name)
		}
	}
}

func TestRunRemovesLeftoverEndpoints(t *testing.T) {
	ctx, c, client := started(t, selectorless("plain"), endpoints("plain", nil), endpoints("gone", nil))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.Run(runCtx, 1) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := client.CoreV1().Endpoints("ns").Get(ctx, "gone", metav1.GetOptions{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("endpoints without a service left at startup were not deleted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := client.CoreV1().Endpoints("ns").Get(ctx, "plain", metav1.GetOptions{}); err != nil {
		t.Errorf("endpoints of a selector-less service: %v, want kept", err)
	}
}

func addrs(prefix string, n int) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, n)
	for i := range out {
		out[i].IP = fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250+1)
	}
	return out
}

func TestTruncate(t *testing.T) {
	type counts [][2]int // per subset: ready, not ready
	tests := []struct {
		name     string
		in, want counts
		over     bool
	}{
		{"at the limit nothing is dropped", counts{{6, 4}}, counts{{6, 4}}, false},
		{"not-ready addresses make room for ready ones", counts{{6, 6}}, counts{{6, 4}}, true},
		{"not-ready addresses are shared out in proportion", counts{{2, 6}, {2, 3}}, counts{{2, 4}, {2, 2}}, true},
		{"too many ready addresses: shared out, no not-ready left", counts{{7, 1}, {4, 0}}, counts{{7, 0}, {3, 0}}, true},
		{"a subset left empty is dropped", counts{{11, 0}, {0, 3}}, counts{{10, 0}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in []corev1.EndpointSubset
			for i, c := range tc.in {
				in = append(in, corev1.EndpointSubset{Addresses: addrs(fmt.Sprintf("10.%d", i), c[0]), NotReadyAddresses: addrs(fmt.Sprintf("10.%d", 100+i), c[1]), Ports: []corev1.EndpointPort{{Port: int32(8000 + i)}}})
			}
			got, over := Truncate(in, 10)
			var gotCounts counts
			for _, s := range got {
				gotCounts = append(gotCounts, [2]int{len(s.Addresses), len(s.NotReadyAddresses)})
			}
			if over != tc.over || fmt.Sprint(gotCounts) != fmt.Sprint(tc.want) {
				t.Errorf("Truncate = %v, %v; want %v, %v", gotCounts, over, tc.want, tc.over)
			}
			for i, s := range got {
				if len(s.Addresses) > 0 && s.Addresses[0].IP != in[i].Addresses[0].IP {
					t.Errorf("subset %d keeps %s first, want the first address %s", i, s.Addresses[0].IP, in[i].Addresses[0].IP)
				}
			}
			if c := tc.in[0]; len(in[0].Addresses) != c[0] || len(in[0].NotReadyAddresses) != c[1] {
				t.Error("the input was modified")
			}
		})
	}
}

func TestOverCapacity(t *testing.T) {
	ctx := context.Background()
	objs := []runtime.Object{service()}
	for i := range MaxAddresses + 5 {
		ready := i < MaxAddresses-10
		objs = append(objs, pod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.42.%d.%d", i/250, i%250+1), 8080, ready))
	}
	c, client := newFixture(t, objs...)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	ep, err := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != MaxAddresses-10 || len(ep.Subsets[0].NotReadyAddresses) != 10 {
		t.Fatalf("subsets hold %d ready, %d not ready; want all %d ready and 10 not ready", len(ep.Subsets[0].Addresses), len(ep.Subsets[0].NotReadyAddresses), MaxAddresses-10)
	}
	if v, ok := ep.Annotations[corev1.EndpointsOverCapacity]; !ok || v != "truncated" {
		t.Errorf("annotations = %v, want %s: truncated", ep.Annotations, corev1.EndpointsOverCapacity)
	}

	// Unchanged, the truncated object is left alone.
	c, client = newFixture(t, append(objs, ep)...)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if acts := controllertest.Filter(client.Actions(), "", "endpoints"); len(acts) != 0 {
		t.Errorf("writes on up-to-date truncated endpoints: %v", acts)
	}

	// Back under capacity, the annotation goes.
	c, client = newFixture(t, service(), pod("a", "10.42.0.2", 8080, true), ep)
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	ep, err = client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; ok || len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 {
		t.Errorf("endpoints = %+v, want one address and no %s annotation", ep, corev1.EndpointsOverCapacity)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
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

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// eventsOn records the kind and name of each event's object.
type eventsOn struct{ got []string }

func (r *eventsOn) Event(obj runtime.Object, _, reason, _ string) {
	kind := fmt.Sprintf("%T", obj)
	if m, ok := obj.(metav1.Object); ok {
		kind += " " + m.GetNamespace() + "/" + m.GetName()
	}
	r.got = append(r.got, reason+" on "+kind)
}

func (r *eventsOn) Eventf(obj runtime.Object, t, reason, msg string, _ ...any) {
	r.Event(obj, t, reason, msg)
}

func (r *eventsOn) AnnotatedEventf(obj runtime.Object, _ map[string]string, t, reason, msg string, _ ...any) {
	r.Event(obj, t, reason, msg)
}

// As Kubernetes, a failed write of an Endpoints object is reported on that object.
func TestWriteFailuresAreReportedOnTheEndpoints(t *testing.T) {
	fail := func(client *fake.Clientset, verb string) {
		client.PrependReactor(verb, "endpoints", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, fmt.Errorf("injected")
		})
	}
	c, client := newFixture(t, service(), pod("a", "10.42.0.2", 8080, true))
	rec := &eventsOn{}
	c.recorder = rec
	fail(client, "create")
	if err := c.sync(context.Background(), "ns/web"); err == nil {
		t.Error("sync succeeded with a failing create")
	}
	ep := endpoints("web", nil)
	ep.Namespace = "ns"
	c, client = newFixture(t, service(), pod("a", "10.42.0.2", 8080, true), ep)
	c.recorder = rec
	fail(client, "update")
	if err := c.sync(context.Background(), "ns/web"); err == nil {
		t.Error("sync succeeded with a failing update")
	}
	want := []string{"FailedToCreateEndpoint on *v1.Endpoints ns/web", "FailedToUpdateEndpoint on *v1.Endpoints ns/web"}
	if !equal(rec.got, want) {
		t.Errorf("events %q, want %q", rec.got, want)
	}
}

// As Kubernetes' staleEndpointsTracker: until the cache holds the Endpoints object the controller
// wrote, a sync is retried rather than writing over it from the older version.
func TestStaleEndpointsAreNotWrittenOver(t *testing.T) {
	ctx := context.Background()
	ep := endpoints("web", nil)
	ep.Namespace, ep.ResourceVersion = "ns", "1"
	client := controllertest.NewClient(service(), pod("a", "10.42.0.2", 8080, true), ep)
	// The fake clientset keeps resourceVersions as written; the API server gives each update a new one.
	rv := 1
	client.PrependReactor("update", "endpoints", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rv++
		a.(k8stesting.UpdateAction).GetObject().(*corev1.Endpoints).ResourceVersion = fmt.Sprint(rv)
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), record.NewFakeRecorder(100), Options{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Load(t, f.Core().V1().Services().Informer(), service())
	controllertest.Load(t, f.Core().V1().Pods().Informer(), pod("a", "10.42.0.2", 8080, true))
	cached, _ := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	controllertest.Load(t, f.Core().V1().Endpoints().Informer(), cached)
	client.ClearActions()

	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	// The pod goes before the cache has seen the update: the sync must wait for it.
	if err := f.Core().V1().Pods().Informer().GetIndexer().Delete(pod("a", "10.42.0.2", 8080, true)); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "ns/web"); err == nil {
		t.Error("sync against the replaced version succeeded, want it retried")
	}
	if n := len(controllertest.Filter(client.Actions(), "update", "endpoints")); n != 1 {
		t.Errorf("updates = %d, want 1: none from the replaced version", n)
	}
	// Once the cache catches up, the sync goes on.
	updated, _ := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if updated.ResourceVersion == cached.ResourceVersion {
		t.Fatalf("update kept resourceVersion %q", updated.ResourceVersion)
	}
	if err := f.Core().V1().Endpoints().Informer().GetIndexer().Update(updated); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	got, _ := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if len(got.Subsets) != 0 {
		t.Errorf("subsets = %+v, want none once the pod is gone", got.Subsets)
	}
}

// As Kubernetes' endpoints controller, a pod update queues only the Services whose endpoints it
// can change: none for a container restart, the selecting ones for readiness, the old and the
// new ones for a relabel.
func TestPodUpdatesQueueOnlyEndpointChanges(t *testing.T) {
	api := service()
	api.Name, api.UID, api.Spec.Selector = "api", "uid-api", map[string]string{"app": "api"}
	base := func(opts ...func(*corev1.Pod)) *corev1.Pod {
		p := pod("a", "10.42.0.2", 8080, true, opts...)
		p.ResourceVersion = "1"
		return p
	}
	for _, tc := range []struct {
		name string
		cur  *corev1.Pod
		want []string
	}{
		{"a restart count", base(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}}
		}), nil},
		{"readiness", base(func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), []string{"ns/web"}},
		{"a relabel", base(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "api"} }), []string{"ns/api", "ns/web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFixture(t, service(), api)
			tc.cur.ResourceVersion = "2"
			c.onPodUpdate(base(), tc.cur)
			var queued []string
			for c.queue.Len() > 0 {
				k, _ := c.queue.Get()
				c.queue.Done(k)
				queued = append(queued, k)
			}
			slices.Sort(queued)
			if !slices.Equal(queued, tc.want) {
				t.Errorf("queued %v, want %v", queued, tc.want)
			}
		})
	}
}

// As Kubernetes' endpoints controller (its TriggerTimeTracker), a written Endpoints object carries
// endpoints.kubernetes.io/last-change-trigger-time: the Service's creation on its first sync, then the
// earliest pod Ready transition newer than the last sync saw; a write with none removes it.
func TestLastChangeTriggerTime(t *testing.T) {
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	svc := service()
	svc.CreationTimestamp = metav1.NewTime(created)
	readyAt := func(ready bool, at time.Time) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
			if !ready {
				p.Status.Conditions[0].Status = corev1.ConditionFalse
			}
		}
	}
	t0 := created.Add(time.Minute)
	a, b := pod("a", "10.42.0.2", 8080, true, readyAt(true, t0)), pod("b", "10.42.0.3", 8080, true, readyAt(true, t0))
	client := controllertest.NewClient(svc, a, b)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints(), record.NewFakeRecorder(100), Options{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Load(t, f.Core().V1().Services().Informer(), svc)
	pods := f.Core().V1().Pods().Informer().GetIndexer()
	controllertest.Load(t, f.Core().V1().Pods().Informer(), a, b)
	// sync syncs the Service once the cache holds the Endpoints as last written, and returns the
	// annotation written.
	sync := func() (string, bool) {
		t.Helper()
		if err := c.sync(ctx, "ns/web"); err != nil {
			t.Fatal(err)
		}
		ep, err := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Core().V1().Endpoints().Informer().GetIndexer().Update(ep); err != nil {
			t.Fatal(err)
		}
		v, ok := ep.Annotations[corev1.EndpointsLastChangeTriggerTime]
		return v, ok
	}

	if v, _ := sync(); v != created.Format(time.RFC3339Nano) {
		t.Errorf("trigger time %q on creation, want the Service's creation %s", v, created.Format(time.RFC3339Nano))
	}
	// a turns not ready at t1, b at t2: the earlier, t1, is the trigger.
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	a, b = pod("a", "10.42.0.2", 8080, true, readyAt(false, t1)), pod("b", "10.42.0.3", 8080, true, readyAt(false, t2))
	for _, p := range []*corev1.Pod{a, b} {
		if err := pods.Update(p); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := sync(); v != t1.Format(time.RFC3339Nano) {
		t.Errorf("trigger time %q, want %s", v, t1.Format(time.RFC3339Nano))
	}
	// A pod goes, no trigger moved forward: the write removes the annotation.
	if err := pods.Delete(b); err != nil {
		t.Fatal(err)
	}
	if v, ok := sync(); ok {
		t.Errorf("trigger time %q after a change with no trigger, want none", v)
	}
}
