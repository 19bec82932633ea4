package manager

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// Against a real API server, with each controller acting as its own service account (the
// replication-controller and disruption-controller roles): the controller named by
// kube-controller-manager's "replicationcontroller" creates a ReplicationController's pods, which
// name it as their controller, and writes its status; a percentage budget over those pods counts
// the ReplicationController's replicas, as Kubernetes' disruption controller does.
func TestReplicationControllerAndItsBudget(t *testing.T) {
	r := runControllers(t, []string{"replicationcontroller", "disruption"}, nil)
	admin, ctx := r.admin, r.ctx
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](4),
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}},
			},
		},
	}
	rc, err := admin.CoreV1().ReplicationControllers("default").Create(ctx, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var owned int
	var status corev1.ReplicationControllerStatus
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, nil
		}
		owned = 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rc.UID && ref.Kind == "ReplicationController" && ref.APIVersion == "v1" {
				owned++
			}
		}
		got, err := admin.CoreV1().ReplicationControllers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		status = got.Status
		return owned == 4 && status.Replicas == 4 && status.ObservedGeneration == got.Generation, nil
	}); err != nil {
		t.Fatalf("%d pods owned by the ReplicationController, status %+v; want 4 and replicas 4", owned, status)
	}

	// 4 replicas, at most 1 (25%) unavailable.
	quarterBudget(t, r, "web", 4, 3)
}
