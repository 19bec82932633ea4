package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/skiffkube/skiff/controllers/endpointslice"
)

// Against a real API server, with the EndpointSlice controller acting as its own service account
// (system:controller:endpointslice-controller) and the shared informers as the manager: a Service's
// slice lists its pods with their node's zone and a trigger time, is updated in place when a pod
// comes, and a pod whose node does not exist yet appears once the node does.
func TestEndpointSliceControllerAgainstAPIServer(t *testing.T) {
	r := runControllers(t, []string{"endpointslice"}, nil)
	admin, ctx := r.admin, r.ctx

	mkNode := func(name, zone string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
		if _, err := admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readyAt := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	mkPod := func(name, node, ip string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/web",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		}
		p, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
		if _, err := admin.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkNode("n1", "zone-a")
	mkPod("web-1", "n1", "10.42.0.2")
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	managed := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: endpointslice.ControllerName}).String()
	zones := func(s discoveryv1.EndpointSlice) map[string]string {
		out := map[string]string{}
		for _, e := range s.Endpoints {
			z := ""
			if e.Zone != nil {
				z = *e.Zone
			}
			out[e.TargetRef.Name] = z
		}
		return out
	}
	waitSlice := func(what string, want map[string]string) discoveryv1.EndpointSlice {
		t.Helper()
		var items []discoveryv1.EndpointSlice
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: managed})
			if err != nil {
				return false, nil
			}
			items = l.Items
			if len(items) != 1 {
				return false, nil
			}
			got := zones(items[0])
			if len(got) != len(want) {
				return false, nil
			}
			for k, v := range want {
				if got[k] != v {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("%s: slices %+v", what, items)
		}
		return items[0]
	}

	first := waitSlice("the Service's slice never listed web-1 in zone-a", map[string]string{"web-1": "zone-a"})
	if v := first.Annotations[corev1.EndpointsLastChangeTriggerTime]; v == "" {
		t.Errorf("annotations %v, want a %s", first.Annotations, corev1.EndpointsLastChangeTriggerTime)
	}

	// A pod on a node that does not exist yet is left out until the node appears; the slice is
	// updated in place throughout.
	mkPod("web-2", "n2", "10.42.1.2")
	mkPod("web-3", "n1", "10.42.0.3")
	s := waitSlice("web-3 never listed", map[string]string{"web-1": "zone-a", "web-3": "zone-a"})
	if s.Name != first.Name {
		t.Errorf("slice %s replaced by %s, want it updated in place", first.Name, s.Name)
	}
	mkNode("n2", "zone-b")
	s = waitSlice("web-2 never listed once its node exists", map[string]string{"web-1": "zone-a", "web-2": "zone-b", "web-3": "zone-a"})
	if s.Name != first.Name {
		t.Errorf("slice %s replaced by %s, want it updated in place", first.Name, s.Name)
	}
}
