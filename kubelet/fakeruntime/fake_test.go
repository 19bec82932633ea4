package fakeruntime

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
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
	r := New(0, nil)
	ctx := context.Background()

	pod := scripted("150ms", "3")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
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
	ok.Spec.RestartPolicy = corev1.RestartPolicyNever
	st, _ = r.SyncPod(ctx, ok, "10.42.0.3")
	if term := st.Containers[0].State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
		t.Fatalf("exit 0: %+v", st.Containers[0].State)
	}
}

func TestUnscriptedAndMalformedPodsRun(t *testing.T) {
	r := New(0, nil)
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
// sidecar running, and ready, once it completed), with a Killing Event;
// under restartPolicy Always they keep running.
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
		rec := record.NewFakeRecorder(10)
		r := New(0, rec)
		st, _ := r.SyncPod(context.Background(), pod, "10.42.0.2")
		proxy := st.InitContainers[0]
		if stopped := proxy.State.Terminated != nil; stopped != tc.stopped || (stopped && (proxy.Ready || *proxy.Started)) {
			t.Errorf("%s, exit %s: sidecar %+v ready=%v, want stopped=%v", tc.policy, tc.code, proxy.State, proxy.Ready, tc.stopped)
		}
		// The kubelet's Killing Event for a sidecar it stops, once.
		var want []string
		if tc.stopped {
			want = []string{"Normal Killing Stopping container proxy"}
		}
		r.SyncPod(context.Background(), pod, "10.42.0.2")
		if got := drain(rec); !slices.Equal(got, want) {
			t.Errorf("%s, exit %s: Events %q, want %q", tc.policy, tc.code, got, want)
		}
	}
}

// The pod's end records the Killing Event only of the sidecars still
// running, as the kubelet kills only running containers: a sidecar the
// pod's status reports exited or backing off (here a pod adopted after an
// agent restart) is not stopped again.
func TestOnlyRunningSidecarsGetAKillingEvent(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := scripted("1s", "0")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "exited", Image: "example.com/proxy", RestartPolicy: &always},
		{Name: "backing-off", Image: "example.com/proxy", RestartPolicy: &always},
		{Name: "running", Image: "example.com/proxy", RestartPolicy: &always},
	}
	start := metav1.NewTime(time.Now().Add(-time.Minute))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start, InitContainerStatuses: []corev1.ContainerStatus{
		{Name: "exited", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}},
		{Name: "backing-off", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		{Name: "running", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
	}}
	rec := record.NewFakeRecorder(10)
	r := New(0, rec)
	r.SyncPod(context.Background(), pod, "10.42.0.2")
	if got, want := drain(rec), []string{"Normal Killing Stopping container running"}; !slices.Equal(got, want) {
		t.Errorf("Events %q, want %q", got, want)
	}
}

// drain returns the Events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func imagePod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-images"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "setup", Image: "example.com/setup:1"},
				{Name: "proxy", Image: "example.com/proxy:1", RestartPolicy: &always},
			},
			Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}},
		},
	}
}

// A pod update that changes the image of a running sidecar or app
// container restarts it from the new image, as the kubelet restarts a
// container whose spec hash changed: restartCount + 1, the killed attempt
// as lastState (143, as the containerd runtime reports a container it
// stopped), a Killing Event in the kubelet's words, a new container ID. A
// completed init container is not run again and keeps reporting the image
// it ran.
func TestImageChangeRestartsSidecarsAndAppContainers(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := New(0, rec)
	ctx := context.Background()
	pod := imagePod()
	first, err := r.SyncPod(ctx, pod, "10.42.0.2")
	if err != nil {
		t.Fatal(err)
	}

	pod.Spec.InitContainers[1].Image = "example.com/proxy:2"
	st, _ := r.SyncPod(ctx, pod, "10.42.0.2")
	proxy, was := st.InitContainers[1], first.InitContainers[1]
	if proxy.Image != "example.com/proxy:2" || proxy.ImageID != "fake://example.com/proxy:2" || proxy.RestartCount != 1 ||
		proxy.State.Running == nil || proxy.ContainerID == was.ContainerID {
		t.Fatalf("sidecar after its image changed: %+v", proxy)
	}
	last := proxy.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 143 || last.Reason != "Error" || last.ContainerID != was.ContainerID ||
		!last.StartedAt.Equal(&was.State.Running.StartedAt) {
		t.Fatalf("sidecar's lastState: %+v", proxy.LastTerminationState)
	}
	if got := st.Pulled["proxy"]; got != `Container image "example.com/proxy:2" already present on machine` {
		t.Errorf("Pulled for the new attempt: %q", got)
	}
	if app := st.Containers[0]; app.RestartCount != 0 || app.ContainerID != first.Containers[0].ContainerID {
		t.Errorf("app container restarted with the sidecar: %+v", app)
	}
	if got, want := drain(rec), []string{"Normal Killing Init container proxy definition changed"}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q", got, want)
	}

	st, _ = r.SyncPod(ctx, pod, "10.42.0.2")
	if proxy := st.InitContainers[1]; proxy.RestartCount != 1 || len(drain(rec)) != 0 {
		t.Errorf("sidecar restarted again with its image unchanged: %+v", proxy)
	}

	pod.Spec.Containers[0].Image = "example.com/app:2"
	st, _ = r.SyncPod(ctx, pod, "10.42.0.2")
	if app := st.Containers[0]; app.Image != "example.com/app:2" || app.RestartCount != 1 || app.State.Running == nil ||
		app.LastTerminationState.Terminated == nil || app.LastTerminationState.Terminated.ExitCode != 143 {
		t.Fatalf("app container after its image changed: %+v", app)
	}
	if got, want := drain(rec), []string{"Normal Killing Container app definition changed, will be restarted"}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want %q", got, want)
	}

	pod.Spec.InitContainers[0].Image = "example.com/setup:2"
	st, _ = r.SyncPod(ctx, pod, "10.42.0.2")
	if setup := st.InitContainers[0]; setup.Image != "example.com/setup:1" || setup.ImageID != "fake://example.com/setup:1" ||
		setup.RestartCount != 0 || setup.State.Terminated == nil || setup.State.Terminated.Reason != "Completed" {
		t.Errorf("completed init container after its image changed: %+v", setup)
	}
	if events := drain(rec); len(events) != 0 {
		t.Errorf("Events for a completed init container: %q", events)
	}
}

// Containers that are no longer running are not restarted by an image
// change — app containers that exited under restartPolicy Never, and the
// sidecars the pod's end stopped — and report the image they ran; nor is
// a pod being stopped.
func TestImageChangeLeavesStoppedContainers(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := New(0, rec)
	ctx := context.Background()
	pod := imagePod()
	pod.Annotations = map[string]string{ExitAfterAnnotation: "0s"}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	r.SyncPod(ctx, pod, "10.42.0.2")
	pod.Spec.InitContainers[1].Image = "example.com/proxy:2"
	pod.Spec.Containers[0].Image = "example.com/app:2"
	st, _ := r.SyncPod(ctx, pod, "10.42.0.2")
	for _, s := range []corev1.ContainerStatus{st.InitContainers[1], st.Containers[0]} {
		if s.State.Terminated == nil || s.RestartCount != 0 || !strings.HasSuffix(s.Image, ":1") {
			t.Errorf("%s: %+v", s.Name, s)
		}
	}
	if got, want := drain(rec), []string{"Normal Killing Stopping container proxy"}; !slices.Equal(got, want) {
		t.Errorf("Events = %q, want only the sidecar's stop at the pod's end %q", got, want)
	}

	running := imagePod()
	running.UID = "uid-stopping"
	r.SyncPod(ctx, running, "10.42.0.3")
	running.Spec.Containers[0].Image = "example.com/app:2"
	st, _ = r.StopPod(ctx, running, time.Second)
	if app := st.Containers[0]; app.RestartCount != 0 || app.Image != "example.com/app:1" || app.State.Terminated == nil {
		t.Errorf("app container of a pod being stopped: %+v", app)
	}
	if events := drain(rec); len(events) != 0 {
		t.Errorf("Events: %q", events)
	}
}

// A hollow node claims recursive read-only mounts on its default runtime
// handler, as a node whose runc and kernel have them (this machine's real
// agent), and runs a pod asking for one as such a node does: the agent
// then reports the mount Enabled.
func TestHollowNodeClaimsRecursiveReadOnlyMountsAndRunsThem(t *testing.T) {
	r := New(0, nil)
	rro, userns := true, false
	want := []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}}}
	if got := r.RuntimeHandlers(); !reflect.DeepEqual(got, want) {
		t.Errorf("runtime handlers %+v, want %+v", got, want)
	}
	enabled := corev1.RecursiveReadOnlyEnabled
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "rro"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
		VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true, RecursiveReadOnly: &enabled}}}}}}
	st, err := r.SyncPod(context.Background(), pod, "10.42.0.2")
	if err != nil || st.Containers[0].State.Running == nil {
		t.Errorf("a pod asking for a recursive read-only mount: %+v, %v; want running", st.Containers, err)
	}
}

// A container that takes longer to stop than the pod's grace period is
// killed when the grace period ends, as a runtime kills one that outlives
// its SIGTERM: 137; one that stops within it ends as a process without a
// SIGTERM handler does, 143.
func TestStopPodKillsContainersOutlivingTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stopDelay, grace time.Duration
		want             int32
	}{
		{"stops at once", 0, time.Second, 143},
		{"stops within the grace period", 10 * time.Millisecond, time.Second, 143},
		{"outlives the grace period", time.Hour, 10 * time.Millisecond, 137},
		{"no grace period", time.Hour, 0, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.stopDelay, nil)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "stop"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox"}}}}
			if _, err := r.SyncPod(context.Background(), pod, "10.42.0.2"); err != nil {
				t.Fatal(err)
			}
			st, err := r.StopPod(context.Background(), pod, tc.grace)
			if err != nil {
				t.Fatal(err)
			}
			term := st.Containers[0].State.Terminated
			if term == nil || term.ExitCode != tc.want || term.Reason != "Error" {
				t.Errorf("stopped container %+v, want exit %d, reason Error", st.Containers[0].State, tc.want)
			}
		})
	}
}
