package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// A hollow pod whose app container exits under restartPolicy Always is
// reported as the kubelet reports a crash loop: the first exit restarted
// at once, the second waiting 10s — phase Running, the container waiting
// in CrashLoopBackOff after one restart with its exit as lastState, the
// pod not Ready (ContainersNotReady), and a BackOff Warning in the
// kubelet's words.
func TestHollowCrashLoopIsReportedAsTheKubelets(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Recorder: rec, RuntimeRetry: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, 1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher", Namespace: "default", UID: "uid-crasher",
			Annotations: map[string]string{fakeruntime.ExitAfterAnnotation: "0s", fakeruntime.ExitCodeAnnotation: "2"}},
		Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	poll(t, "the container backing off", func() (bool, error) {
		got, err = client.CoreV1().Pods("default").Get(ctx, "crasher", metav1.GetOptions{})
		return err == nil && len(got.Status.ContainerStatuses) == 1 && got.Status.ContainerStatuses[0].State.Waiting != nil, nil
	})
	s := got.Status.ContainerStatuses[0]
	if w := s.State.Waiting; w.Reason != "CrashLoopBackOff" || w.Message != "back-off 10s restarting failed container=app pod=crasher_default(uid-crasher)" {
		t.Errorf("waiting %+v", w)
	}
	if last := s.LastTerminationState.Terminated; last == nil || last.ExitCode != 2 || s.Ready || s.RestartCount != 1 {
		t.Errorf("container %+v", s)
	}
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", got.Status.Phase)
	}
	for _, c := range got.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && (c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady") {
			t.Errorf("%s: %s %s, want False ContainersNotReady", c.Type, c.Status, c.Reason)
		}
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if want := "Warning BackOff Back-off restarting failed container app in pod crasher_default(uid-crasher)"; !slices.Contains(events, want) {
		t.Errorf("Events %q, want %q", events, want)
	}
}
