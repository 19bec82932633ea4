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
	tests := []struct {
		name     string
		old, cur *corev1.PodStatus
		want     []string
	}{
		{"a container starts", status(), status(running("a")), []string{"Normal Created Created container c", "Normal Started Started container c"}},
		{"still running: nothing new", status(running("a")), status(running("a")), nil},
		{"a restart is a new start", status(running("a")), status(running("b")), []string{"Normal Created Created container c", "Normal Started Started container c"}},
		{"image pull fails", status(waiting("ContainerCreating", 0)), status(waiting("ErrImagePull", 0)),
			[]string{`Warning Failed Failed to pull image "img": m`, "Warning Failed Error: ErrImagePull"}},
		{"then backs off", status(waiting("ErrImagePull", 0)), status(waiting("ImagePullBackOff", 0)),
			[]string{`Normal BackOff Back-off pulling image "img"`, "Warning Failed Error: ImagePullBackOff"}},
		{"the same back-off is not repeated", status(waiting("ImagePullBackOff", 0)), status(waiting("ImagePullBackOff", 0)), nil},
		{"each crash-loop back-off is recorded", status(waiting("CrashLoopBackOff", 1)), status(waiting("CrashLoopBackOff", 2)),
			[]string{"Warning BackOff Back-off restarting failed container c in pod web_default(u1)"}},
		{"bad configuration", status(), status(waiting("CreateContainerConfigError", 0)), []string{"Warning Failed Error: m"}},
		{"image absent, never pulled", status(), status(waiting("ErrImageNeverPull", 0)),
			[]string{`Warning ErrImageNeverPull Container image "img" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull"}},
		{"OOM-killed, not restarted", status(running("a")), status(oomNow), []string{oomEvent}},
		{"OOM-killed, backing off", status(running("a")), status(backingOff), []string{oomEvent,
			"Warning BackOff Back-off restarting failed container c in pod web_default(u1)"}},
		{"OOM-killed and restarted at once", status(running("a")), status(restarted), []string{oomEvent,
			"Normal Created Created container c", "Normal Started Started container c"}},
		{"an OOM kill is recorded once", status(backingOff), status(restarted), []string{
			"Normal Created Created container c", "Normal Started Started container c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			recordTransitions(rec, pod, tc.old, tc.cur)
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
