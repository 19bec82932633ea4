package endpoints

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
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
