package fakeruntime

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func scripted(after, code string) *corev1.Pod {
	ann := map[string]string{ExitAfterAnnotation: after}
	if code != "" {
		ann[ExitCodeAnnotation] = code
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID("uid-" + after + code), Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app"}}},
	}
}

func TestScriptedExit(t *testing.T) {
	r := New(0)
	ctx := context.Background()

	pod := scripted("150ms", "3")
	st, err := r.SyncPod(ctx, pod, "10.42.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if st.Containers[0].State.Running == nil {
		t.Fatalf("before its exit time the container runs: %+v", st.Containers[0].State)
	}
	if d := r.ResyncAfter(pod); d <= 0 || d > 150*time.Millisecond {
		t.Fatalf("ResyncAfter = %s, want (0, 150ms]", d)
	}
	time.Sleep(200 * time.Millisecond)
	st, _ = r.SyncPod(ctx, pod, "10.42.0.2")
	term := st.Containers[0].State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Fatalf("after its exit time: %+v", st.Containers[0].State)
	}
	if d := r.ResyncAfter(pod); d != 0 {
		t.Fatalf("ResyncAfter after exit = %s", d)
	}

	ok := scripted("0s", "")
	st, _ = r.SyncPod(ctx, ok, "10.42.0.3")
	if term := st.Containers[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("exit 0: %+v", st.Containers[0].State)
	}
}

func TestUnscriptedAndMalformedPodsRun(t *testing.T) {
	r := New(0)
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{UID: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}},
		scripted("soon", ""),
		scripted("1ms", "x"),
	} {
		time.Sleep(5 * time.Millisecond)
		st, _ := r.SyncPod(context.Background(), pod, "10.42.0.2")
		time.Sleep(5 * time.Millisecond)
		st, _ = r.SyncPod(context.Background(), pod, "10.42.0.2")
		if st.Containers[0].State.Running == nil {
			t.Errorf("pod %s: want running, got %+v", pod.UID, st.Containers[0].State)
		}
		if d := r.ResyncAfter(pod); d != 0 {
			t.Errorf("pod %s: ResyncAfter = %s", pod.UID, d)
		}
	}
}

// When a scripted pod's app containers have exited for good, its sidecars
// are stopped, as the kubelet stops them (so the pod does not report a
// sidecar running, and ready, once it completed); under restartPolicy
// Always they keep running.
func TestSidecarsStopWhenThePodCompletes(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		policy  corev1.RestartPolicy
		code    string
		stopped bool
	}{
		{corev1.RestartPolicyNever, "0", true},
		{corev1.RestartPolicyNever, "1", true},
		{corev1.RestartPolicyOnFailure, "0", true},
		{corev1.RestartPolicyOnFailure, "1", false},
		{corev1.RestartPolicyAlways, "0", false},
	} {
		pod := scripted("0s", tc.code)
		pod.UID = types.UID("uid-" + string(tc.policy) + tc.code)
		pod.Spec.RestartPolicy = tc.policy
		pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "example.com/proxy", RestartPolicy: &always}}
		st, _ := New(0).SyncPod(context.Background(), pod, "10.42.0.2")
		proxy := st.InitContainers[0]
		if stopped := proxy.State.Terminated != nil; stopped != tc.stopped || (stopped && (proxy.Ready || *proxy.Started)) {
			t.Errorf("%s, exit %s: sidecar %+v ready=%v, want stopped=%v", tc.policy, tc.code, proxy.State, proxy.Ready, tc.stopped)
		}
	}
}
