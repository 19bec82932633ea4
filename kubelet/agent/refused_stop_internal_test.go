package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/validation"
)

// statusGate makes a fake client's pod status writes go through skiff's
// API server validation (ValidateStatusUpdate against the stored pod),
// after failing the first few with a server error, so that the agent
// retries the sync of a pod before any of its writes lands.
type statusGate struct {
	mu       sync.Mutex
	failures int // writes still to fail
	rejected []string
}

func (g *statusGate) install(client *fake.Clientset) {
	client.PrependReactor("update", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		u := action.(k8stesting.UpdateAction)
		if u.GetSubresource() != "status" {
			return false, nil, nil
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.failures > 0 {
			g.failures--
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd is having a bad day"))
		}
		pod := u.GetObject().(*corev1.Pod)
		cur, err := client.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pod.Namespace, pod.Name)
		if err != nil {
			return true, nil, err
		}
		if errs := validation.ValidateStatusUpdate(pod, cur); len(errs) > 0 {
			g.rejected = append(g.rejected, errs.ToAggregate().Error())
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, errs)
		}
		return false, nil, nil
	})
}

func (g *statusGate) rejections() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.rejected)
}

// refusedPodThatRan is a pod asking for a user namespace that an older
// agent ran anyway: its init container completed, its app container runs.
func refusedPodThatRan(policy corev1.RestartPolicy) *corev1.Pod {
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ran", Namespace: "default", UID: "uid-ran"},
		Spec: corev1.PodSpec{NodeName: "n", HostUsers: ptr.To(false), RestartPolicy: policy, TerminationGracePeriodSeconds: ptr.To[int64](0),
			InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.9", StartTime: &started,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup", Image: "busybox", ContainerID: "containerd://i1", Ready: true,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", ContainerID: "containerd://i1", StartedAt: started, FinishedAt: started}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ContainerID: "containerd://c1", Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}},
	}
}

// drain returns the Events recorded so far.
func drain(rec *record.FakeRecorder, events []string) []string {
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	return events
}

func count(events []string, e string) int {
	n := 0
	for _, got := range events {
		if got == e {
			n++
		}
	}
	return n
}

// A refused pod that ran is stopped once, whatever its restart policy,
// and its status says so in a form skiff's API server accepts: the
// completed init container stays terminated (the kubelet keeps an old
// terminated status as it is), and the killed app container, which the
// runtime no longer has, is reported as the v1.33 kubelet reports a
// container it can no longer locate (ContainerStatusUnknown, 137). Under
// Never it ends terminated and the pod fails; under OnFailure and Always
// it waits to restart with the kill as its last state and one restart
// more, the pod Running (every container restarting, as getPhase counts
// it). The first status writes fail: the retries neither kill it again nor
// repeat its Killing Event.
func TestRefusedPodThatRanIsStoppedOnce(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways} {
		t.Run(string(policy), func(t *testing.T) { testRefusedPodThatRanIsStoppedOnce(t, policy) })
	}
}

func testRefusedPodThatRanIsStoppedOnce(t *testing.T, policy corev1.RestartPolicy) {
	pod := refusedPodThatRan(policy)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}}, pod)
	gate := &statusGate{failures: 3}
	gate.install(client)
	rt, rec, ctx := runRefusingAgent(t, client)

	got, err := waitRanStopped(ctx, client, 5*time.Second)
	if err != nil {
		t.Fatalf("waiting for the app container to be reported stopped: %v (status %+v; writes rejected %q)", err, got.Status, gate.rejections())
	}
	// The Killing Event goes before the kill, FailedCreatePodSandBox after
	// the status write; wait for it, then a little for stray retries.
	const sandboxEvent = "Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	var events []string
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		events = drain(rec, events)
		return slices.Contains(events, sandboxEvent), nil
	})
	time.Sleep(300 * time.Millisecond)
	events = drain(rec, events)

	if r := gate.rejections(); len(r) > 0 {
		t.Errorf("status writes rejected by the API server: %q", r)
	}
	if k := rt.kills(); len(k) != 1 {
		t.Errorf("pod killed %d times, want once", len(k))
	}
	if n := count(events, "Normal Killing Stopping container app"); n != 1 {
		t.Errorf("%d Killing Events, want 1 (Events %q)", n, events)
	}
	if n := count(events, sandboxEvent); n != 1 {
		t.Errorf("%d FailedCreatePodSandBox Events, want 1 (Events %q)", n, events)
	}

	st := got.Status
	if st.PodIP != "" {
		t.Errorf("pod IP %q, want none", st.PodIP)
	}
	if s := st.InitContainerStatuses; len(s) != 1 || s[0].State.Terminated == nil || s[0].State.Terminated.Reason != "Completed" || s[0].ContainerID != "containerd://i1" {
		t.Errorf("init container %+v, want it kept as it completed", s)
	}
	app := st.ContainerStatuses[0]
	unknown := func(term *corev1.ContainerStateTerminated) bool {
		return term != nil && term.ExitCode == 137 && term.Reason == "ContainerStatusUnknown" && term.Message != ""
	}
	switch policy {
	case corev1.RestartPolicyNever:
		if st.Phase != corev1.PodFailed || !unknown(app.State.Terminated) || app.RestartCount != 0 || app.Ready {
			t.Errorf("phase %s, app %+v: want Failed, app terminated 137 ContainerStatusUnknown, not restarted, not ready", st.Phase, app)
		}
	default:
		if st.Phase != corev1.PodRunning || app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" ||
			!unknown(app.LastTerminationState.Terminated) || app.RestartCount != 1 || app.Ready {
			t.Errorf("phase %s, app %+v: want Running, app waiting in PodInitializing with a 137 ContainerStatusUnknown last state, restarted once, not ready", st.Phase, app)
		}
	}
}

// A refused pod is stopped at its first refusal whatever its status says:
// an agent may have started containers and not lived to report them, or a
// crash-looping container may be between two runs. Only containers its
// status shows running get a Killing Event; here none.
func TestRefusedPodIsStoppedWhateverItsStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
	}{
		{"no status", corev1.PodStatus{}},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}},
		{"crash loop", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: "containerd://c4"}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
				Spec: corev1.PodSpec{NodeName: "n", HostUsers: ptr.To(false),
					Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
				Status: tc.status,
			}
			client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}}, pod)
			(&statusGate{}).install(client)
			rt, rec, ctx := runRefusingAgent(t, client)
			var events []string
			err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				events = drain(rec, events)
				return slices.ContainsFunc(events, func(e string) bool { return e != "" && e[:7] == "Warning" }), nil
			})
			if err != nil {
				t.Fatalf("no FailedCreatePodSandBox Event (Events %q)", events)
			}
			time.Sleep(200 * time.Millisecond)
			events = drain(rec, events)
			if k := rt.kills(); len(k) != 1 {
				t.Errorf("pod killed %d times, want once", len(k))
			}
			if slices.ContainsFunc(events, func(e string) bool { return e != "" && e[:14] == "Normal Killing" }) {
				t.Errorf("Killing Event for a pod with nothing running: %q", events)
			}
		})
	}
}

// runRefusingAgent runs, until the test ends, an agent for node n over
// client on a runtime that records its kills and reports the default
// handlers; ctx ends with the test.
func runRefusingAgent(t *testing.T, client *fake.Clientset) (*killRecorder, *record.FakeRecorder, context.Context) {
	t.Helper()
	rec := record.NewFakeRecorder(100)
	rt := &killRecorder{handlersRuntime: handlersRuntime{handlers: DefaultRuntimeHandlers(true)}, t: t}
	a, err := New(client, rt, Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx, 1)
	return rt, rec, ctx
}
