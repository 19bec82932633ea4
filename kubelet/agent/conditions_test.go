package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Container statuses for the condition tests.
func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, Started: new(true), ContainerID: "fake://" + name,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Started: new(false), ContainerID: "fake://" + name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func waitingFor(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Started: new(false), State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func podWith(policy corev1.RestartPolicy, inits []corev1.Container, names ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{RestartPolicy: policy, InitContainers: inits}}
	for _, n := range names {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n})
	}
	return pod
}

func sidecar(name string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, RestartPolicy: &always}
}

func findCondition(st *corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

type wantCondition struct {
	status          corev1.ConditionStatus
	reason, message string
}

func checkCondition(t *testing.T, st *corev1.PodStatus, typ corev1.PodConditionType, want wantCondition) {
	t.Helper()
	c := findCondition(st, typ)
	if c == nil {
		t.Errorf("no %s condition", typ)
		return
	}
	if got := (wantCondition{c.Status, c.Reason, c.Message}); got != want {
		t.Errorf("%s = %+v, want %+v", typ, got, want)
	}
}

// The kubelet's pod conditions say which containers hold the pod back, and
// why a finished pod is not ready (pkg/kubelet/status/generate.go).
func TestPodConditionsReasonsAndMessages(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	gated := podWith(corev1.RestartPolicyAlways, nil, "a")
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	gated.Status.Conditions = []corev1.PodCondition{{Type: "example.com/dns", Status: corev1.ConditionFalse}}
	tests := []struct {
		name                                   string
		pod                                    *corev1.Pod
		state                                  PodState
		phase                                  corev1.PodPhase
		initialized, containersReady, podReady wantCondition
	}{
		{
			name:  "two app containers not ready",
			pod:   podWith(corev1.RestartPolicyAlways, nil, "a", "b", "c"),
			state: PodState{Containers: []corev1.ContainerStatus{running("a", false), running("b", true), running("c", false)}},
			phase: corev1.PodRunning, initialized: wantCondition{status: corev1.ConditionTrue},
			containersReady: wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a c]"},
			podReady:        wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a c]"},
		},
		{
			name:  "a sidecar not ready holds the pod back",
			pod:   podWith(corev1.RestartPolicyAlways, []corev1.Container{sidecar("proxy")}, "a"),
			state: PodState{InitContainers: []corev1.ContainerStatus{running("proxy", false)}, Containers: []corev1.ContainerStatus{running("a", true)}},
			phase: corev1.PodRunning, initialized: wantCondition{status: corev1.ConditionTrue},
			containersReady: wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [proxy]"},
			podReady:        wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [proxy]"},
		},
		{
			name:            "an init container still running",
			pod:             podWith(corev1.RestartPolicyAlways, []corev1.Container{{Name: "first"}, {Name: "second"}}, "a"),
			state:           PodState{InitContainers: []corev1.ContainerStatus{exited("first", 0), running("second", false)}, Containers: []corev1.ContainerStatus{waitingFor("a", "PodInitializing")}},
			phase:           corev1.PodPending,
			initialized:     wantCondition{corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: [second]"},
			containersReady: wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
			podReady:        wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [a]"},
		},
		{
			name:  "readiness gates missing or not True",
			pod:   gated,
			state: PodState{Containers: []corev1.ContainerStatus{running("a", true)}},
			phase: corev1.PodRunning, initialized: wantCondition{status: corev1.ConditionTrue},
			containersReady: wantCondition{status: corev1.ConditionTrue},
			podReady: wantCondition{corev1.ConditionFalse, "ReadinessGatesNotReady",
				`corresponding condition of pod readiness gate "example.com/lb" does not exist., the status of pod readiness gate "example.com/dns" is not "True", but False`},
		},
		{
			name:  "failed",
			pod:   podWith(corev1.RestartPolicyNever, nil, "a", "b"),
			state: PodState{Containers: []corev1.ContainerStatus{exited("a", 0), exited("b", 2)}},
			phase: corev1.PodFailed, initialized: wantCondition{status: corev1.ConditionTrue},
			containersReady: wantCondition{corev1.ConditionFalse, "PodFailed", ""},
			podReady:        wantCondition{corev1.ConditionFalse, "PodFailed", ""},
		},
		{
			name:            "succeeded",
			pod:             podWith(corev1.RestartPolicyOnFailure, []corev1.Container{{Name: "init"}}, "a"),
			state:           PodState{InitContainers: []corev1.ContainerStatus{exited("init", 0)}, Containers: []corev1.ContainerStatus{exited("a", 0)}},
			phase:           corev1.PodSucceeded,
			initialized:     wantCondition{corev1.ConditionTrue, "PodCompleted", ""},
			containersReady: wantCondition{corev1.ConditionFalse, "PodCompleted", ""},
			podReady:        wantCondition{corev1.ConditionFalse, "PodCompleted", ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(tc.pod, tc.state, "10.0.0.5", "192.0.2.1", now, false)
			if st.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", st.Phase, tc.phase)
			}
			checkCondition(t, st, corev1.PodInitialized, tc.initialized)
			checkCondition(t, st, corev1.ContainersReady, tc.containersReady)
			checkCondition(t, st, corev1.PodReady, tc.podReady)
		})
	}
}

// A pod the agent stopped for good (deleted, evicted) is not ready because
// it completed or failed, and its sandbox is gone.
func TestTerminatedStatusConditions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int32
		phase  corev1.PodPhase
		reason string
	}{{"all exited 0", 0, corev1.PodSucceeded, "PodCompleted"}, {"one failed", 143, corev1.PodFailed, "PodFailed"}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(corev1.RestartPolicyAlways, nil, "a")
			pod.Spec.NodeName = "n"
			pod.Status = *computeStatus(pod, PodState{Containers: []corev1.ContainerStatus{running("a", true)}}, "10.0.0.5", "192.0.2.1", time.Now(), false)
			client := fake.NewClientset(pod)
			a := &Agent{client: client}
			final := PodState{Containers: []corev1.ContainerStatus{exited("a", tc.code)}}
			if err := a.writeTerminated(context.Background(), pod, &final); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", got.Status.Phase, tc.phase)
			}
			checkCondition(t, &got.Status, corev1.ContainersReady, wantCondition{corev1.ConditionFalse, tc.reason, ""})
			checkCondition(t, &got.Status, corev1.PodReady, wantCondition{corev1.ConditionFalse, tc.reason, ""})
			checkCondition(t, &got.Status, corev1.PodReadyToStartContainers, wantCondition{status: corev1.ConditionFalse})
		})
	}
}

// Init containers that are not sidecars are reported ready once they
// exited with 0 (kubectl describe: "Ready: True"), and not while running.
func TestInitContainersReadyOnceCompleted(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, []corev1.Container{{Name: "first"}, {Name: "second"}, sidecar("proxy")}, "a")
	state := PodState{
		InitContainers: []corev1.ContainerStatus{exited("first", 0), running("second", true), running("proxy", true)},
		Containers:     []corev1.ContainerStatus{waitingFor("a", "PodInitializing")},
	}
	st := computeStatus(pod, state, "10.0.0.5", "192.0.2.1", time.Now(), false)
	for i, want := range []bool{true, false, true} {
		if got := st.InitContainerStatuses[i]; got.Ready != want {
			t.Errorf("init container %s ready = %v, want %v", got.Name, got.Ready, want)
		}
	}
}

// A sidecar that restarts after the app containers started does not send
// the pod back to Pending or uninitialized (the kubelet's getPhase and
// Initialized condition).
func TestSidecarRestartKeepsPodInitialized(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, []corev1.Container{{Name: "init"}, sidecar("proxy")}, "a")
	backingOff := waitingFor("proxy", "CrashLoopBackOff")
	backingOff.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	notStarted := running("proxy", false)
	notStarted.Started = new(false) // its startup probe has not passed yet
	for name, proxy := range map[string]corev1.ContainerStatus{"backing off": backingOff, "restarted, not started yet": notStarted} {
		t.Run(name, func(t *testing.T) {
			state := PodState{InitContainers: []corev1.ContainerStatus{exited("init", 0), proxy}, Containers: []corev1.ContainerStatus{running("a", true)}}
			st := computeStatus(pod, state, "10.0.0.5", "192.0.2.1", time.Now(), false)
			if st.Phase != corev1.PodRunning {
				t.Errorf("phase %s, want Running", st.Phase)
			}
			checkCondition(t, st, corev1.PodInitialized, wantCondition{status: corev1.ConditionTrue})
			checkCondition(t, st, corev1.ContainersReady, wantCondition{corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [proxy]"})
		})
	}
	// Before any app container ran, a sidecar not started yet keeps the pod
	// initializing.
	state := PodState{InitContainers: []corev1.ContainerStatus{exited("init", 0), notStarted}, Containers: []corev1.ContainerStatus{waitingFor("a", "PodInitializing")}}
	st := computeStatus(pod, state, "10.0.0.5", "192.0.2.1", time.Now(), false)
	if st.Phase != corev1.PodPending {
		t.Errorf("phase %s before the app started, want Pending", st.Phase)
	}
	checkCondition(t, st, corev1.PodInitialized, wantCondition{corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: [proxy]"})
}

// A sidecar stopped once the app containers are done ends as its process
// does (143 without a SIGTERM handler): the kubelet's getPhase leaves
// restartable init containers out of the pod's outcome, so a pod whose app
// containers exited 0 under restartPolicy Never (a Job's) Succeeded, and a
// sidecar's crash before its restart does not fail it.
func TestStoppedSidecarsDoNotDecideThePhase(t *testing.T) {
	backingOff := waitingFor("proxy", "CrashLoopBackOff")
	backingOff.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	for _, tc := range []struct {
		name  string
		proxy corev1.ContainerStatus
		app   corev1.ContainerStatus
		want  corev1.PodPhase
	}{
		{"app done, sidecar stopped", exited("proxy", 143), exited("a", 0), corev1.PodSucceeded},
		{"app failed, sidecar stopped", exited("proxy", 143), exited("a", 2), corev1.PodFailed},
		{"app runs, sidecar crashed", exited("proxy", 1), running("a", true), corev1.PodRunning},
		{"app runs, sidecar backing off", backingOff, running("a", true), corev1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(corev1.RestartPolicyNever, []corev1.Container{{Name: "init"}, sidecar("proxy")}, "a")
			state := PodState{InitContainers: []corev1.ContainerStatus{exited("init", 0), tc.proxy}, Containers: []corev1.ContainerStatus{tc.app}}
			if got := computeStatus(pod, state, "10.0.0.5", "192.0.2.1", time.Now(), false).Phase; got != tc.want {
				t.Fatalf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

// The pod's phase from its app containers, as the kubelet's getPhase.
func TestPhase(t *testing.T) {
	restarting := waitingFor("b", "CrashLoopBackOff")
	restarting.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1}
	restartingOK := waitingFor("b", "CrashLoopBackOff")
	restartingOK.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0}
	tests := []struct {
		name   string
		policy corev1.RestartPolicy
		state  []corev1.ContainerStatus
		want   corev1.PodPhase
	}{
		{"one runs, one still pulling its image", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running("a", true), waitingFor("b", "ErrImagePull")}, corev1.PodPending},
		{"one runs, one not created yet", corev1.RestartPolicyNever, []corev1.ContainerStatus{running("a", true), waitingFor("b", "ContainerCreating")}, corev1.PodPending},
		{"one runs, one backing off after a crash", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running("a", true), restarting}, corev1.PodRunning},
		{"all running", corev1.RestartPolicyAlways, []corev1.ContainerStatus{running("a", true), running("b", true)}, corev1.PodRunning},
		{"always: all exited", corev1.RestartPolicyAlways, []corev1.ContainerStatus{exited("a", 0), exited("b", 0)}, corev1.PodRunning},
		{"always: backing off", corev1.RestartPolicyAlways, []corev1.ContainerStatus{exited("a", 0), restartingOK}, corev1.PodRunning},
		{"on failure: one exited 0, one backing off", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited("a", 0), restarting}, corev1.PodRunning},
		{"on failure: all exited 0", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{exited("a", 0), exited("b", 0)}, corev1.PodSucceeded},
		{"never: one failed, one runs", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited("a", 3), running("b", true)}, corev1.PodRunning},
		{"never: one failed", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited("a", 3), exited("b", 0)}, corev1.PodFailed},
		{"never: all exited 0", corev1.RestartPolicyNever, []corev1.ContainerStatus{exited("a", 0), exited("b", 0)}, corev1.PodSucceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(tc.policy, nil, "a", "b")
			if got := computeStatus(pod, PodState{Containers: tc.state}, "10.0.0.5", "192.0.2.1", time.Now(), false).Phase; got != tc.want {
				t.Fatalf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

// The kubelet writes the conditions others own first, then its own in its
// order, PodScheduled last; a pod bound without the scheduler gets it too.
func TestPodConditionOrder(t *testing.T) {
	scheduledAt := metav1.NewTime(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	now := scheduledAt.Add(time.Minute)
	state := PodState{Containers: []corev1.ContainerStatus{running("a", true)}}
	want := []corev1.PodConditionType{"example.com/lb", corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}
	types := func(st *corev1.PodStatus) []corev1.PodConditionType {
		var out []corev1.PodConditionType
		for _, c := range st.Conditions {
			out = append(out, c.Type)
		}
		return out
	}

	scheduled := podWith(corev1.RestartPolicyAlways, nil, "a")
	scheduled.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: scheduledAt},
		{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: scheduledAt},
	}
	st := computeStatus(scheduled, state, "10.0.0.5", "192.0.2.1", now, false)
	if got := types(st); !slices.Equal(got, want) {
		t.Fatalf("conditions %v, want %v", got, want)
	}
	if c := findCondition(st, corev1.PodScheduled); !c.LastTransitionTime.Equal(&scheduledAt) {
		t.Errorf("PodScheduled moved to %v, want the scheduler's %v", c.LastTransitionTime, scheduledAt)
	}

	bound := podWith(corev1.RestartPolicyAlways, nil, "a")
	st = computeStatus(bound, state, "10.0.0.5", "192.0.2.1", now, false)
	if got := types(st); !slices.Equal(got, want[1:]) {
		t.Fatalf("conditions of a pod bound by hand %v, want %v", got, want[1:])
	}
	checkCondition(t, st, corev1.PodScheduled, wantCondition{status: corev1.ConditionTrue})
}

// A pod deleted while initializing ends as the kubelet's status manager
// ends it: the init container that ran is killed, those after it and the
// app containers never came to run and stay waiting (no exit code a Job's
// podFailurePolicy could match); completed init containers stay ready.
// Once initialized, an app container that never started could not be
// located (137, ContainerStatusUnknown).
func TestTerminatedStatusOfAPodInitializing(t *testing.T) {
	end := func(pod *corev1.Pod) *corev1.PodStatus {
		t.Helper()
		pod.Spec.NodeName = "n"
		client := fake.NewClientset(pod)
		a := &Agent{client: client}
		if err := a.writeTerminated(context.Background(), pod, nil); err != nil {
			t.Fatal(err)
		}
		got, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != corev1.PodFailed {
			t.Errorf("phase %s, want Failed", got.Status.Phase)
		}
		return &got.Status
	}
	state := func(c corev1.ContainerStatus) string {
		switch {
		case c.State.Waiting != nil:
			return "waiting " + c.State.Waiting.Reason
		case c.State.Terminated != nil:
			return fmt.Sprintf("terminated %d %s ready=%v", c.State.Terminated.ExitCode, c.State.Terminated.Reason, c.Ready)
		}
		return "running"
	}
	completed := exited("first", 0)
	completed.State.Terminated.Reason = "Completed"
	completed.Ready = true

	pod := podWith(corev1.RestartPolicyNever, []corev1.Container{{Name: "first"}, {Name: "second"}, {Name: "third"}}, "a")
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending,
		InitContainerStatuses: []corev1.ContainerStatus{completed, running("second", false), waitingFor("third", "PodInitializing")},
		ContainerStatuses:     []corev1.ContainerStatus{waitingFor("a", "PodInitializing")}}
	st := end(pod)
	var got []string
	for _, c := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		got = append(got, c.Name+": "+state(c))
	}
	want := []string{"first: terminated 0 Completed ready=true", "second: terminated 137 Error ready=false",
		"third: waiting PodInitializing", "a: waiting PodInitializing"}
	if !slices.Equal(got, want) {
		t.Errorf("containers\n%q\nwant\n%q", got, want)
	}

	initialized := podWith(corev1.RestartPolicyNever, []corev1.Container{{Name: "first"}}, "a", "b")
	initialized.Status = corev1.PodStatus{Phase: corev1.PodPending,
		InitContainerStatuses: []corev1.ContainerStatus{completed},
		ContainerStatuses:     []corev1.ContainerStatus{running("a", true), waitingFor("b", "ContainerCreating")}}
	st = end(initialized)
	if s := state(st.ContainerStatuses[1]); s != "terminated 137 ContainerStatusUnknown ready=false" {
		t.Errorf("app container that never started: %s, want terminated 137 ContainerStatusUnknown", s)
	}
}
