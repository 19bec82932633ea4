package podruntime

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

func sidecarPod(policy corev1.RestartPolicy) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod()
	pod.Spec.RestartPolicy = policy
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: "logs", RestartPolicy: &always},
	}
	pod.Spec.Containers = []corev1.Container{{Name: "main"}, {Name: "helper"}}
	return pod
}

func exited(name string, code int) krt.ContainerStatus {
	return krt.ContainerStatus{ID: name + "-id", Name: name, State: krt.StateExited, ExitCode: code}
}

func running(name string) krt.ContainerStatus {
	return krt.ContainerStatus{ID: name + "-id", Name: name, State: krt.StateRunning}
}

// Sidecars stop after every other container, the last declared first, as
// the kubelet orders a pod's termination; the others stop at once.
func TestStopsBeforeOrdersSidecarsLastInReverse(t *testing.T) {
	pod := sidecarPod(corev1.RestartPolicyAlways)
	list := []krt.ContainerStatus{running("proxy"), running("main"), running("logs"), running("helper")}
	got := stopsBefore(pod, list)
	want := [][]int{
		{1, 2, 3}, // proxy: main, logs (declared after it), helper
		nil,       // main
		{1, 3},    // logs: main, helper
		nil,       // helper
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stopsBefore = %v, want %v", got, want)
	}
	// An orphan's pod has no spec: everything stops at once.
	if got := stopsBefore(testPod(), list); !reflect.DeepEqual(got, make([][]int, 4)) {
		t.Errorf("without a spec: %v, want no ordering", got)
	}
}

// A pod is done for good, and its sidecars are stopped, once its app
// containers will not run again, or an init container failed under Never.
func TestPodFinishedWhenAppContainersAreDoneForGood(t *testing.T) {
	hist := func(list ...krt.ContainerStatus) map[string][]krt.ContainerStatus { return attemptsByName(list) }
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		hist   map[string][]krt.ContainerStatus
		want   bool
	}{
		{"never, all exited", corev1.RestartPolicyNever,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0), exited("helper", 1)), true},
		{"never, one still running", corev1.RestartPolicyNever,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0), running("helper")), false},
		{"never, one not started", corev1.RestartPolicyNever,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0)), false},
		{"onFailure, all succeeded", corev1.RestartPolicyOnFailure,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0), exited("helper", 0)), true},
		{"onFailure, one failed", corev1.RestartPolicyOnFailure,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0), exited("helper", 2)), false},
		{"always", corev1.RestartPolicyAlways,
			hist(exited("setup", 0), running("proxy"), running("logs"), exited("main", 0), exited("helper", 0)), false},
		{"never, init container failed", corev1.RestartPolicyNever, hist(exited("setup", 1)), true},
		{"onFailure, init container failed", corev1.RestartPolicyOnFailure, hist(exited("setup", 1)), false},
		{"never, sidecar exited", corev1.RestartPolicyNever, hist(exited("setup", 0), exited("proxy", 1)), false},
	} {
		pod := sidecarPod(tc.policy)
		if got := podFinished(pod, tc.hist); got != tc.want {
			t.Errorf("%s: podFinished = %v, want %v", tc.name, got, tc.want)
		}
		// The same verdict from the statuses a sync reports.
		state := reportAll(pod, tc.hist, "PodInitializing")
		if got := finishedIn(pod, state); got != tc.want {
			t.Errorf("%s: finishedIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Initialization stands at the last init container that has run; every
// one is past once an app container has run.
func TestInitsPast(t *testing.T) {
	pod := sidecarPod(corev1.RestartPolicyAlways)
	for _, tc := range []struct {
		list []krt.ContainerStatus
		want int
	}{
		{nil, 0},
		{[]krt.ContainerStatus{exited("setup", 0)}, 0},
		{[]krt.ContainerStatus{exited("setup", 0), exited("proxy", 137), running("logs")}, 2},
		{[]krt.ContainerStatus{exited("main", 0)}, 3},
	} {
		if got := initsPast(pod, attemptsByName(tc.list)); got != tc.want {
			t.Errorf("initsPast(%v) = %d, want %d", tc.list, got, tc.want)
		}
	}
}
