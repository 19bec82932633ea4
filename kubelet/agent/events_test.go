package agent

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

func TestRecordTransitions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
	status := func(cs ...corev1.ContainerStatus) *corev1.PodStatus { return &corev1.PodStatus{ContainerStatuses: cs} }
	running := func(id string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", Image: "img", ContainerID: id, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	waiting := func(reason string, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", Image: "img", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
	}
	oom := func(id string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, ContainerID: id}
	}
	oomNow := corev1.ContainerStatus{Name: "c", Image: "img", ContainerID: "a", State: corev1.ContainerState{Terminated: oom("a")}}
	backingOff := waiting("CrashLoopBackOff", 1)
	backingOff.LastTerminationState.Terminated = oom("a")
	restarted := running("b")
	restarted.LastTerminationState.Terminated = oom("a")
	const oomEvent = "Warning OOMKilled Container c was OOMKilled (exit code 137): it used more than its memory limit of 32Mi"
	completed := func(id string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", Image: "img", ContainerID: id, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ContainerID: id, Reason: "Completed", StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}}
	}
	present := map[string]string{"c": `Container image "img" already present on machine`}
	tests := []struct {
		name     string
		old, cur *corev1.PodStatus
		pulled   map[string]string
		want     []string
	}{
		{"a container starts with its image present", status(), status(running("a")), present,
			[]string{`Normal Pulled Container image "img" already present on machine`, "Normal Created Created container c", "Normal Started Started container c"}},
		{"a container ran to completion between syncs", status(), status(completed("a")), present,
			[]string{`Normal Pulled Container image "img" already present on machine`, "Normal Created Created container c", "Normal Started Started container c"}},
		{"a running container completes: nothing new", status(running("a")), status(completed("a")), present, nil},
		{"still completed: nothing new", status(completed("a")), status(completed("a")), present, nil},
		{"a container starts", status(), status(running("a")), nil, []string{"Normal Created Created container c", "Normal Started Started container c"}},
		{"still running: nothing new", status(running("a")), status(running("a")), nil, nil},
		{"a restart is a new start", status(running("a")), status(running("b")), nil, []string{"Normal Created Created container c", "Normal Started Started container c"}},
		{"image pull fails", status(waiting("ContainerCreating", 0)), status(waiting("ErrImagePull", 0)), nil,
			[]string{`Warning Failed Failed to pull image "img": m`, "Warning Failed Error: ErrImagePull"}},
		{"then backs off", status(waiting("ErrImagePull", 0)), status(waiting("ImagePullBackOff", 0)), nil,
			[]string{`Normal BackOff Back-off pulling image "img"`, "Warning Failed Error: ImagePullBackOff"}},
		{"the same back-off is not repeated", status(waiting("ImagePullBackOff", 0)), status(waiting("ImagePullBackOff", 0)), nil, nil},
		{"each crash-loop back-off is recorded", status(waiting("CrashLoopBackOff", 1)), status(waiting("CrashLoopBackOff", 2)), nil,
			[]string{"Warning BackOff Back-off restarting failed container c in pod web_default(u1)"}},
		{"bad configuration", status(), status(waiting("CreateContainerConfigError", 0)), nil, []string{"Warning Failed Error: m"}},
		{"image absent, never pulled", status(), status(waiting("ErrImageNeverPull", 0)), nil,
			[]string{`Warning ErrImageNeverPull Container image "img" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull"}},
		{"OOM-killed, not restarted", status(running("a")), status(oomNow), nil, []string{oomEvent}},
		{"OOM-killed, backing off", status(running("a")), status(backingOff), nil, []string{oomEvent,
			"Warning BackOff Back-off restarting failed container c in pod web_default(u1)"}},
		{"OOM-killed and restarted at once", status(running("a")), status(restarted), nil, []string{oomEvent,
			"Normal Created Created container c", "Normal Started Started container c"}},
		{"an OOM kill is recorded once", status(backingOff), status(restarted), nil, []string{
			"Normal Created Created container c", "Normal Started Started container c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			recordTransitions(rec, pod, tc.old, tc.cur, tc.pulled)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
