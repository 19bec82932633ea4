package replication

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func newRC(name string, replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 3, ResourceVersion: "1"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To(replicas),
			Selector: map[string]string{"app": name},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// capture records which object each event was recorded on.
type capture struct {
	mu      sync.Mutex
	objects []runtime.Object
	reasons []string
}

func (c *capture) Event(obj runtime.Object, _, reason, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objects = append(c.objects, obj)
	c.reasons = append(c.reasons, reason)
}

func (c *capture) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	c.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (c *capture) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	c.Eventf(obj, eventtype, reason, format, args...)
}

var _ record.EventRecorder = &capture{}

// keepSpecOnStatusWrites makes replicationcontrollers/status writes change
// only the status, as the API server's status subresource does. The fake
// tracker stores the whole object sent, so a status write made from a stale
// cached copy would put back the replicas and generation the test has just
// changed, and the controller would never see the scale-down.
func keepSpecOnStatusWrites(client *fake.Clientset) {
	client.PrependReactor("update", "replicationcontrollers", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua, ok := a.(k8stesting.UpdateAction)
		if !ok || ua.GetSubresource() != "status" {
			return false, nil, nil
		}
		sent := ua.GetObject().(*corev1.ReplicationController)
		gvr := corev1.SchemeGroupVersion.WithResource("replicationcontrollers")
		stored, err := client.Tracker().Get(gvr, sent.Namespace, sent.Name)
		if err != nil {
			return true, nil, err
		}
		rc := stored.(*corev1.ReplicationController).DeepCopy()
		rc.Status = *sent.Status.DeepCopy()
		if err := client.Tracker().Update(gvr, rc, rc.Namespace); err != nil {
			return true, nil, err
		}
		updated, err := client.Tracker().Get(gvr, rc.Namespace, rc.Name)
		return true, updated, err
	})
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error %v)", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The ReplicaSet controller, run on ReplicationControllers, creates and adopts pods that name the
// ReplicationController as their controller, writes its status through replicationcontrollers/status,
// records its events on it, and scales down when its replicas drop.
func TestReplicationControllerManagesPods(t *testing.T) {
	rc := newRC("web", 3)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "ns", UID: "uid-orphan",
		Labels: map[string]string{"app": "web"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	client := controllertest.NewClient(rc, orphan)
	keepSpecOnStatusWrites(client)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := &capture{}
	c, err := New(client, f.Core().V1().ReplicationControllers(), f.Core().V1().Pods(), rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	go c.Run(ctx, 2)
	defer f.Shutdown()
	defer cancel()

	ownedBy := func(want *corev1.ReplicationController) ([]corev1.Pod, error) {
		list, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == want.UID {
				if ref.Kind != "ReplicationController" || ref.APIVersion != "v1" {
					return nil, fmt.Errorf("pod %s: controller reference %+v", p.Name, ref)
				}
				out = append(out, p)
			}
		}
		return out, nil
	}
	waitFor(t, "3 pods owned by the ReplicationController and its status", func() (bool, error) {
		pods, err := ownedBy(rc)
		if err != nil || len(pods) != 3 {
			return false, err
		}
		got, err := client.CoreV1().ReplicationControllers("ns").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 3 && got.Status.FullyLabeledReplicas == 2 && got.Status.ObservedGeneration == 3, err
	})
	pods, _ := ownedBy(rc)
	adopted := false
	for _, p := range pods {
		adopted = adopted || p.Name == "orphan"
	}
	if !adopted {
		t.Errorf("the orphan matching the selector was not adopted: %v", pods)
	}
	if n := len(controllertest.Filter(client.Actions(), "update", "replicasets")); n != 0 {
		t.Errorf("%d ReplicaSet updates; the controller must write ReplicationControllers only", n)
	}

	rec.mu.Lock()
	if len(rec.objects) == 0 {
		t.Error("no events recorded")
	}
	for i, o := range rec.objects {
		if rc, ok := o.(*corev1.ReplicationController); !ok || rc.UID != "uid-web" {
			t.Errorf("event %s recorded on %T, want the ReplicationController", rec.reasons[i], o)
		}
	}
	rec.mu.Unlock()

	// Scaling down deletes pods.
	scaled, err := client.CoreV1().ReplicationControllers("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scaled.Spec.Replicas = ptr.To[int32](1)
	scaled.Generation = 4
	if _, err := client.CoreV1().ReplicationControllers("ns").Update(ctx, scaled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "1 pod left and status observing generation 4", func() (bool, error) {
		pods, err := ownedBy(rc)
		if err != nil || len(pods) != 1 {
			return false, err
		}
		got, err := client.CoreV1().ReplicationControllers("ns").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 1 && got.Status.ObservedGeneration == 4, err
	})
}

// A ReplicationController converted to a ReplicaSet and back is unchanged, so the status the
// controller writes carries the spec and metadata it read.
func TestConversionRoundTrip(t *testing.T) {
	rc := newRC("web", 2)
	rc.Labels = map[string]string{"app": "web"}
	rc.Spec.MinReadySeconds = 5
	rc.Status = corev1.ReplicationControllerStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 3,
		Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}}
	rs := toReplicaSet(rc)
	if rs.Spec.Selector.MatchLabels["app"] != "web" || rs.Spec.Template.Labels["tier"] != "front" || string(rs.Status.Conditions[0].Type) != "ReplicaFailure" {
		t.Errorf("ReplicaSet: %+v", rs)
	}
	back, err := toReplicationController(rs)
	if err != nil || !apiequality.Semantic.DeepEqual(back, rc) {
		t.Errorf("round trip: %v\n got  %+v\n want %+v", err, back, rc)
	}
	rs.Spec.Template.Labels["tier"] = "changed"
	if rc.Spec.Template.Labels["tier"] != "front" {
		t.Error("the ReplicaSet shares its template with the ReplicationController")
	}
}
