package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// killRuntime stops nothing: terminate's own Events are what is tested.
type killRuntime struct{}

func (killRuntime) Name() string                            { return "test" }
func (killRuntime) Version(context.Context) (string, error) { return "1", nil }
func (killRuntime) SyncPod(context.Context, *corev1.Pod, string) (PodState, error) {
	return PodState{}, nil
}
func (killRuntime) KillPod(context.Context, *corev1.Pod, time.Duration) error { return nil }

// Deleting a pod stops every running container, sidecars included, each
// with the kubelet's Killing Event: the app containers first, then the
// sidecars, the last one first; a completed init container is not stopped.
func TestTerminateRecordsKillingForEveryRunningContainer(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, []corev1.Container{{Name: "init"}, sidecar("log"), sidecar("proxy")}, "a", "b")
	pod.Spec.NodeName = "n"
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Status = *computeStatus(pod, PodState{
		InitContainers: []corev1.ContainerStatus{exited("init", 0), running("log", true), running("proxy", true)},
		Containers:     []corev1.ContainerStatus{running("a", true), exited("b", 0)},
	}, "10.0.0.5", "192.0.2.1", time.Now(), false)
	rec := record.NewFakeRecorder(10)
	a, err := New(fake.NewClientset(pod), killRuntime{}, Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.terminate(context.Background(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	events := recordedEvents(rec)
	want := []string{"Normal Killing Stopping container a", "Normal Killing Stopping container proxy", "Normal Killing Stopping container log"}
	if !slices.Equal(events, want) {
		t.Errorf("Events %q, want %q", events, want)
	}
}

// A pod deleted while an init container runs has that one stopped too,
// with its Killing Event.
func TestTerminateRecordsKillingForARunningInitContainer(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, []corev1.Container{{Name: "setup"}}, "a")
	pod.Spec.NodeName = "n"
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Status = *computeStatus(pod, PodState{
		InitContainers: []corev1.ContainerStatus{running("setup", false)},
		Containers:     []corev1.ContainerStatus{waitingFor("a", "PodInitializing")},
	}, "10.0.0.5", "192.0.2.1", time.Now(), false)
	rec := record.NewFakeRecorder(10)
	a, err := New(fake.NewClientset(pod), killRuntime{}, Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.terminate(context.Background(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	events := recordedEvents(rec)
	if want := []string{"Normal Killing Stopping container setup"}; !slices.Equal(events, want) {
		t.Errorf("Events %q, want %q", events, want)
	}
}

// A pod being deleted whose final status cannot be written at first (the
// API server briefly unavailable) is stopped again at the next sync and its
// status written then, but its Killing Events are recorded once, as the
// kubelet records them once per container it stops.
func TestTerminateRecordsKillingOnceWhileTheStatusIsRetried(t *testing.T) {
	killingOverARetriedTerminate(t, "update", "status")
}

// A pod being deleted whose removal from the API fails at first (its
// containers stopped, its final status written) is removed at the next
// sync, its Killing Events still recorded once.
func TestTerminateRecordsKillingOnceWhileTheRemovalIsRetried(t *testing.T) {
	killingOverARetriedTerminate(t, "delete", "")
}

// killingOverARetriedTerminate terminates a running pod being deleted
// twice, the first time with its first verb request on pods (subresource
// sub) refused, and checks the Killing Event was recorded once.
func killingOverARetriedTerminate(t *testing.T, verb, sub string) {
	t.Helper()
	pod := podWith(corev1.RestartPolicyAlways, nil, "a")
	pod.Spec.NodeName = "n"
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Status = *computeStatus(pod, PodState{Containers: []corev1.ContainerStatus{running("a", true)}}, "10.0.0.5", "192.0.2.1", time.Now(), false)
	client := fake.NewClientset(pod)
	failed := false
	client.PrependReactor(verb, "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != sub || failed {
			return false, nil, nil
		}
		failed = true
		return true, nil, apierrors.NewServiceUnavailable("the server is shutting down")
	})
	rec := record.NewFakeRecorder(10)
	a, err := New(client, killRuntime{}, Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.terminate(context.Background(), "ns/p", pod); err == nil {
		t.Fatalf("terminate succeeded with its %s %s refused", verb, sub)
	}
	if err := a.terminate(context.Background(), "ns/p", pod); err != nil {
		t.Fatal(err)
	}
	if events, want := recordedEvents(rec), []string{"Normal Killing Stopping container a"}; !slices.Equal(events, want) {
		t.Errorf("Events %q, want %q", events, want)
	}
}

// recordedEvents takes the Events rec holds, oldest first.
func recordedEvents(rec *record.FakeRecorder) []string {
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	return events
}

// stopKillRuntime stops pods (PodStopper) and counts the kills that remove
// what is left of them.
type stopKillRuntime struct {
	killRuntime
	mu     sync.Mutex
	killed map[types.UID]int
}

func (r *stopKillRuntime) StopPod(context.Context, *corev1.Pod, time.Duration) (PodState, error) {
	return PodState{}, nil
}

func (r *stopKillRuntime) KillPod(_ context.Context, pod *corev1.Pod, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed[pod.UID]++
	return nil
}

// A pod first seen being deleted (the agent restarted meanwhile) whose
// stop is not done (its final status cannot be written) and which then
// goes from the API (force-deleted) has what is left of it removed, as a
// pod the agent ran: its sandbox killed, and nothing kept of it.
func TestTerminatingPodGoneBeforeItsStopIsDoneIsCleanedUp(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, nil, "a")
	pod.Spec.NodeName = "n"
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	client := fake.NewClientset(pod)
	client.PrependReactor("update", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewServiceUnavailable("the server is shutting down")
	})
	rt := &stopKillRuntime{killed: map[types.UID]int{}}
	a, err := New(client, rt, Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := a.indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.sync(ctx, "ns/p"); err == nil {
		t.Fatal("sync succeeded with the final status write failing")
	}
	if err := a.indexer.Delete(pod); err != nil {
		t.Fatal(err)
	}
	if _, err := a.sync(ctx, "ns/p"); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	killed := rt.killed[pod.UID]
	rt.mu.Unlock()
	if killed != 1 {
		t.Errorf("pod killed %d times once gone, want once", killed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.tracked) != 0 || len(a.stopping) != 0 {
		t.Errorf("kept of the gone pod: tracked %v, stopping %v", a.tracked, a.stopping)
	}
}

// slowStopRuntime stops a pod's containers as a real runtime does: it
// takes the whole grace period (its containers ignore SIGTERM) unless the
// stop is called off; it tells stops of each StopPod's grace.
type slowStopRuntime struct {
	killRuntime
	stops chan time.Duration
}

func (r slowStopRuntime) StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (PodState, error) {
	r.stops <- grace
	select {
	case <-time.After(grace):
		return PodState{Containers: []corev1.ContainerStatus{exited("a", 137)}}, nil
	case <-ctx.Done():
		return PodState{}, ctx.Err()
	}
}

// A second delete with a shorter grace period (kubectl delete
// --grace-period=1 after --grace-period=60) cuts short the stop under way,
// as the kubelet's pod worker restarts a termination whose grace period
// shrinks; the containers are stopped again with the shorter one. A
// deletion whose grace period is not shorter leaves the stop alone.
func TestTerminateHonoursAShortenedGracePeriod(t *testing.T) {
	pod := podWith(corev1.RestartPolicyAlways, nil, "a")
	pod.Spec.NodeName = "n"
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.DeletionGracePeriodSeconds = new(int64(60))
	pod.Status = *computeStatus(pod, PodState{Containers: []corev1.ContainerStatus{running("a", true)}}, "10.0.0.5", "192.0.2.1", time.Now(), false)
	rt := slowStopRuntime{stops: make(chan time.Duration, 4)}
	a, err := New(fake.NewClientset(pod), rt, Config{NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.terminate(context.Background(), "ns/p", pod) }()
	if g := <-rt.stops; g != time.Minute {
		t.Fatalf("first stop with grace %v, want 1m", g)
	}
	same := pod.DeepCopy()
	same.ResourceVersion = "2"
	a.podUpdated(same)
	select {
	case err := <-done:
		t.Fatalf("terminate ended (%v) on an update that did not shorten the grace period", err)
	case <-time.After(100 * time.Millisecond):
	}
	shorter := pod.DeepCopy()
	shorter.DeletionGracePeriodSeconds = new(int64(1))
	a.podUpdated(shorter)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("terminate reported the pod stopped although its stop was called off")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stop under the 60s grace period went on after the grace period was shortened to 1s")
	}
	go func() { done <- a.terminate(context.Background(), "ns/p", shorter) }()
	if g := <-rt.stops; g != time.Second {
		t.Errorf("stopped again with grace %v, want 1s", g)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// graceKillRuntime tells of the grace period each KillPod was given.
type graceKillRuntime struct {
	killRuntime
	kills chan time.Duration
}

func (r graceKillRuntime) KillPod(_ context.Context, _ *corev1.Pod, grace time.Duration) error {
	r.kills <- grace
	return nil
}

// A pod removed from the API at once (kubectl delete --grace-period=0
// --force, or never deleted gracefully) still has its containers stopped
// gracefully, as the kubelet stops an orphaned pod: SIGTERM, then the grace
// period its last known state gives (its deletion's, else its spec's)
// before SIGKILL.
func TestGonePodIsStoppedWithItsGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     *int64
		deletion *int64
		want     time.Duration
	}{
		{name: "spec grace", spec: new(int64(20)), want: 20 * time.Second},
		{name: "default grace", want: 30 * time.Second},
		{name: "being deleted", spec: new(int64(20)), deletion: new(int64(5)), want: 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(corev1.RestartPolicyAlways, nil, "a")
			pod.Spec.NodeName = "n"
			pod.Spec.TerminationGracePeriodSeconds = tc.spec
			if tc.deletion != nil {
				now := metav1.Now()
				pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, tc.deletion
			}
			rt := graceKillRuntime{kills: make(chan time.Duration, 1)}
			a, err := New(fake.NewClientset(), rt, Config{NodeName: "n"})
			if err != nil {
				t.Fatal(err)
			}
			a.indexer = cache.NewStore(cache.MetaNamespaceKeyFunc)
			a.tracked["ns/p"] = pod
			if _, err := a.sync(context.Background(), "ns/p"); err != nil {
				t.Fatal(err)
			}
			if g := <-rt.kills; g != tc.want {
				t.Errorf("killed with grace %v, want %v", g, tc.want)
			}
		})
	}
}
