package fakeruntime

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// clock is a hand-moved clock for the runtime.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newClocked returns a runtime on a clock standing at t0.
func newClocked(rec record.EventRecorder) (*Runtime, *clock, time.Time) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	r := New(0, rec)
	r.now = c.now
	return r, c, t0
}

// crashing is a pod whose app container exits with code after after,
// under policy.
func crashing(policy corev1.RestartPolicy, after, code string) *corev1.Pod {
	pod := scripted(after, code)
	pod.Namespace = "default"
	pod.Spec.RestartPolicy = policy
	return pod
}

// syncApp syncs pod and returns its app container's status.
func syncApp(t *testing.T, r *Runtime, pod *corev1.Pod) corev1.ContainerStatus {
	t.Helper()
	st, err := r.SyncPod(context.Background(), pod, "10.42.0.2")
	if err != nil {
		t.Fatal(err)
	}
	return st.Containers[0]
}

// wantBackingOff checks that s waits in CrashLoopBackOff for delay, not
// ready, after attempt n exited with code at exit.
func wantBackingOff(t *testing.T, pod *corev1.Pod, s corev1.ContainerStatus, n int32, delay string, code int32, exit time.Time) {
	t.Helper()
	want := "back-off " + delay + " restarting failed container=app pod=p_default(" + string(pod.UID) + ")"
	if w := s.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" || w.Message != want {
		t.Fatalf("state %+v, want waiting CrashLoopBackOff %q", s.State, want)
	}
	if s.RestartCount != n || s.Ready || *s.Started || s.ContainerID != containerID(pod, "app", n) {
		t.Errorf("backing off: restartCount %d (want %d), ready %v, started %v, id %s", s.RestartCount, n, s.Ready, *s.Started, s.ContainerID)
	}
	last := s.LastTerminationState.Terminated
	if last == nil || last.ExitCode != code || last.Reason != "Error" || !last.FinishedAt.Time.Equal(exit) || last.ContainerID != s.ContainerID {
		t.Errorf("lastState %+v, want attempt %d's exit %d at %s", s.LastTerminationState, n, code, exit)
	}
}

// wantRunning checks that s runs attempt n, started at start, ready.
func wantRunning(t *testing.T, pod *corev1.Pod, s corev1.ContainerStatus, n int32, start time.Time) {
	t.Helper()
	if r := s.State.Running; r == nil || !r.StartedAt.Time.Equal(start) {
		t.Fatalf("state %+v, want running since %s", s.State, start)
	}
	if s.RestartCount != n || !s.Ready || !*s.Started || s.ContainerID != containerID(pod, "app", n) {
		t.Errorf("running: restartCount %d (want %d), ready %v, started %v, id %s", s.RestartCount, n, s.Ready, *s.Started, s.ContainerID)
	}
}

func wantResync(t *testing.T, r *Runtime, pod *corev1.Pod, want time.Duration) {
	t.Helper()
	if got := r.ResyncAfter(pod); got != want {
		t.Errorf("ResyncAfter = %s, want %s", got, want)
	}
}

// An app container that exits under restartPolicy Always is restarted as
// the kubelet restarts it: the first exit at once (attempt 1 runs with a
// new container ID, the exit as its lastState, nothing waits); the second
// waits in CrashLoopBackOff (not ready, its exit as lastState) for 10s,
// the next 20s, and so on up to 5 minutes. The agent is asked to look
// again at each exit and each back-off's end.
func TestExitedContainerRestartsWithCrashLoopBackOff(t *testing.T) {
	r, clk, t0 := newClocked(nil)
	pod := crashing(corev1.RestartPolicyAlways, "30s", "1")
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

	wantRunning(t, pod, syncApp(t, r, pod), 0, t0)
	wantResync(t, r, pod, 30*time.Second)

	clk.advance(30 * time.Second)
	wantResync(t, r, pod, time.Millisecond) // the exit, due: look at once
	st, _ := r.SyncPod(context.Background(), pod, "10.42.0.2")
	s := st.Containers[0]
	wantRunning(t, pod, s, 1, sec(30))
	if last := s.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || !last.StartedAt.Time.Equal(t0) ||
		!last.FinishedAt.Time.Equal(sec(30)) || last.ContainerID != containerID(pod, "app", 0) {
		t.Errorf("attempt 1's lastState %+v, want attempt 0's exit", s.LastTerminationState)
	}
	if st.Pulled["app"] == "" {
		t.Errorf("no Pulled for the new attempt")
	}
	wantResync(t, r, pod, 30*time.Second)

	clk.advance(30 * time.Second)
	wantBackingOff(t, pod, syncApp(t, r, pod), 1, "10s", 1, sec(60))
	wantResync(t, r, pod, 10*time.Second)

	clk.advance(5 * time.Second)
	wantBackingOff(t, pod, syncApp(t, r, pod), 1, "10s", 1, sec(60))
	wantResync(t, r, pod, 5*time.Second)

	clk.advance(5 * time.Second)
	s = syncApp(t, r, pod)
	wantRunning(t, pod, s, 2, sec(70))
	if last := s.LastTerminationState.Terminated; last == nil || !last.StartedAt.Time.Equal(sec(30)) ||
		!last.FinishedAt.Time.Equal(sec(60)) || last.ContainerID != containerID(pod, "app", 1) {
		t.Errorf("attempt 2's lastState %+v, want attempt 1's exit", s.LastTerminationState)
	}
	wantResync(t, r, pod, 30*time.Second)

	clk.advance(30 * time.Second)
	wantBackingOff(t, pod, syncApp(t, r, pod), 2, "20s", 1, sec(100))
	wantResync(t, r, pod, 20*time.Second)
	clk.advance(20 * time.Second)
	wantRunning(t, pod, syncApp(t, r, pod), 3, sec(120))

	// Unobserved, the loop goes on: attempts start at 190s, 300s, 490s
	// and 820s (back-offs of 40s, 80s, 160s and 300s); attempt 7 exits
	// at 850s and waits the cap.
	clk.t = sec(880)
	wantBackingOff(t, pod, syncApp(t, r, pod), 7, "5m0s", 1, sec(850))
	wantResync(t, r, pod, 270*time.Second)
	clk.t = sec(1150)
	wantRunning(t, pod, syncApp(t, r, pod), 8, sec(1150))
	clk.t = sec(1180)
	wantBackingOff(t, pod, syncApp(t, r, pod), 8, "5m0s", 1, sec(1180))
}

// An attempt that ran for more than 10 minutes is restarted at once, as a
// first exit is, and the back-off starts again at 10s; one that ran for
// exactly 10 minutes is not yet stable.
func TestLongRunningAttemptsBackOffAfresh(t *testing.T) {
	r, clk, t0 := newClocked(nil)
	pod := crashing(corev1.RestartPolicyAlways, "11m", "2")
	syncApp(t, r, pod)
	for n := int32(1); n <= 3; n++ {
		clk.advance(11 * time.Minute)
		wantRunning(t, pod, syncApp(t, r, pod), n, t0.Add(time.Duration(n)*11*time.Minute))
		wantResync(t, r, pod, 11*time.Minute)
	}

	r, clk, t0 = newClocked(nil)
	pod = crashing(corev1.RestartPolicyAlways, "10m", "2")
	syncApp(t, r, pod)
	clk.advance(10 * time.Minute)
	wantRunning(t, pod, syncApp(t, r, pod), 1, t0.Add(10*time.Minute))
	clk.advance(10 * time.Minute)
	wantBackingOff(t, pod, syncApp(t, r, pod), 1, "10s", 2, t0.Add(20*time.Minute))
}

// restartPolicy decides which exits are restarted: Always every one,
// OnFailure the failed ones; Never none, nor OnFailure a success, which
// stay exited (the pod finishes) and ask for no further look.
func TestRestartPolicyDecidesWhatIsRestarted(t *testing.T) {
	for _, tc := range []struct {
		policy   corev1.RestartPolicy
		code     string
		restarts bool
	}{
		{corev1.RestartPolicyAlways, "0", true},
		{corev1.RestartPolicyAlways, "1", true},
		{"", "0", true}, // unset is the API's default, Always
		{corev1.RestartPolicyOnFailure, "1", true},
		{corev1.RestartPolicyOnFailure, "0", false},
		{corev1.RestartPolicyNever, "1", false},
		{corev1.RestartPolicyNever, "0", false},
	} {
		r, clk, _ := newClocked(nil)
		pod := crashing(tc.policy, "1s", tc.code)
		syncApp(t, r, pod)
		clk.advance(time.Second)
		s := syncApp(t, r, pod)
		restarted := s.State.Running != nil && s.RestartCount == 1 // a first exit: at once
		if restarted != tc.restarts || !tc.restarts && s.State.Terminated == nil {
			t.Errorf("%q, exit %s: after the exit %+v (%d restarts), want restarted=%v", tc.policy, tc.code, s.State, s.RestartCount, tc.restarts)
		}
		if !tc.restarts && r.ResyncAfter(pod) != 0 {
			t.Errorf("%q, exit %s: ResyncAfter = %s for a container done for good", tc.policy, tc.code, r.ResyncAfter(pod))
		}
		clk.advance(time.Hour)
		if s := syncApp(t, r, pod); (s.RestartCount > 0) != tc.restarts {
			t.Errorf("%q, exit %s: an hour later restartCount %d, want restarted=%v", tc.policy, tc.code, s.RestartCount, tc.restarts)
		}
	}
}

// A pod adopted after an agent restart (its startTime known) has its crash
// loop played from that time, not started afresh.
func TestAdoptedPodKeepsItsCrashLoop(t *testing.T) {
	r, _, t0 := newClocked(nil)
	pod := crashing(corev1.RestartPolicyAlways, "30s", "1")
	pod.Status.StartTime = &metav1.Time{Time: t0.Add(-880 * time.Second)}
	wantBackingOff(t, pod, syncApp(t, r, pod), 7, "5m0s", 1, t0.Add(-30*time.Second))
}

// An image change reaches a container backing off at once: it starts from
// the new image (restartCount + 1, no Killing: nothing ran), its back-off
// afresh, as podruntime and the kubelet restart it: the kubelet begins
// the new definition's back-off with that restart, so its next exit waits
// 10s.
func TestImageChangeStartsABackingOffContainerAtOnce(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r, clk, t0 := newClocked(rec)
	pod := crashing(corev1.RestartPolicyAlways, "30s", "1")
	syncApp(t, r, pod)
	clk.advance(75 * time.Second)
	syncApp(t, r, pod) // attempt 2 runs
	clk.advance(25 * time.Second)
	wantBackingOff(t, pod, syncApp(t, r, pod), 2, "20s", 1, t0.Add(100*time.Second))

	clk.advance(5 * time.Second)
	pod.Spec.Containers[0].Image = "example.com/app:2"
	s := syncApp(t, r, pod)
	wantRunning(t, pod, s, 3, t0.Add(105*time.Second))
	if s.Image != "example.com/app:2" || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("after the image change: %+v", s)
	}
	if events := drain(rec); len(events) != 0 {
		t.Errorf("Events: %q", events)
	}
	clk.advance(30 * time.Second)
	wantBackingOff(t, pod, syncApp(t, r, pod), 3, "10s", 1, t0.Add(135*time.Second))
}

// A running app container restarted for an image change starts its
// back-off afresh as the kubelet does: with no earlier attempt its next
// exit is a first one, restarted at once; after earlier attempts (the
// kubelet keeps the latest that exited) the kubelet begins the back-off
// with the restart, so the next exit waits 10s.
func TestImageChangeOfARunningContainerStartsItsBackOffAfresh(t *testing.T) {
	r, clk, t0 := newClocked(nil)
	pod := crashing(corev1.RestartPolicyAlways, "30s", "1")
	syncApp(t, r, pod)
	clk.advance(10 * time.Second)
	pod.Spec.Containers[0].Image = "example.com/app:2"
	wantRunning(t, pod, syncApp(t, r, pod), 1, t0.Add(10*time.Second))
	clk.advance(30 * time.Second) // attempt 1 exits at 40s: at once
	wantRunning(t, pod, syncApp(t, r, pod), 2, t0.Add(40*time.Second))

	clk.advance(10 * time.Second)
	pod.Spec.Containers[0].Image = "example.com/app:3"
	wantRunning(t, pod, syncApp(t, r, pod), 3, t0.Add(50*time.Second))
	clk.advance(30 * time.Second) // attempt 3 exits at 80s: 10s
	wantBackingOff(t, pod, syncApp(t, r, pod), 3, "10s", 1, t0.Add(80*time.Second))
}

// A pod stopped while a container backs off reports that container as its
// latest attempt ended: its scripted exit, not 143.
func TestStopPodReportsABackingOffContainerByItsExit(t *testing.T) {
	r, clk, t0 := newClocked(nil)
	pod := crashing(corev1.RestartPolicyAlways, "30s", "1")
	syncApp(t, r, pod)
	clk.advance(65 * time.Second) // attempt 1 from 30s, exited at 60s
	st, err := r.StopPod(context.Background(), pod, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Containers[0]
	term := s.State.Terminated
	if term == nil || term.ExitCode != 1 || !term.FinishedAt.Time.Equal(t0.Add(60*time.Second)) || s.RestartCount != 1 || s.Ready {
		t.Fatalf("stopped while backing off: %+v", s)
	}
	if last := s.LastTerminationState.Terminated; last == nil || !last.FinishedAt.Time.Equal(t0.Add(30*time.Second)) {
		t.Errorf("lastState %+v, want attempt 0's exit", s.LastTerminationState)
	}
}
