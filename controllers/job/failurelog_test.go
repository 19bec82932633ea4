package job

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestFailureLogKeepsTheLatestFailuresSinceTheLastSuccess(t *testing.T) {
	job := newJob()
	failedAt := func(name string, ago time.Duration) *corev1.Pod {
		return newPod(name, corev1.PodFailed, finishedAgo(ago))
	}
	var many []*corev1.Pod
	for i := range 12 {
		many = append(many, failedAt(fmt.Sprintf("f%d", i), time.Duration(12-i)*time.Minute))
	}
	for _, tc := range []struct {
		name      string
		syncs     [][]*corev1.Pod // the pods each sync sees
		failures  int
		latest    time.Duration // ago
		succeeded bool
	}{
		{"a pod seen twice counts once", [][]*corev1.Pod{{failedAt("a", time.Minute)}, {failedAt("a", time.Minute)}}, 1, time.Minute, false},
		{"gone pods are remembered", [][]*corev1.Pod{{failedAt("a", 2*time.Minute)}, {failedAt("b", time.Minute)}, nil}, 2, time.Minute, false},
		{"at most the newest few", [][]*corev1.Pod{many}, rememberedFailures, time.Minute, false},
		{"a later success clears them", [][]*corev1.Pod{{failedAt("a", 2*time.Minute)}, {newPod("ok", corev1.PodSucceeded, finishedAgo(time.Minute))}}, 0, 0, true},
		{"failures after the success stay", [][]*corev1.Pod{
			{newPod("ok", corev1.PodSucceeded, finishedAgo(3*time.Minute)), failedAt("a", 4*time.Minute)},
			{failedAt("b", time.Minute)},
		}, 1, time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newFailureLog()
			var success time.Time
			var failures []seenFailure
			for _, pods := range tc.syncs {
				success, failures = l.observe("ns/work", job, pods)
			}
			if len(failures) != tc.failures || success.IsZero() == tc.succeeded {
				t.Fatalf("failures %+v, last success %v", failures, success)
			}
			if tc.failures > 0 && !failures[len(failures)-1].at.Equal(now.Add(-tc.latest)) {
				t.Errorf("latest failure at %v, want %v ago", failures[len(failures)-1].at, tc.latest)
			}
			l.forget("ns/work")
			if s, f := l.observe("ns/work", job, nil); !s.IsZero() || len(f) != 0 {
				t.Errorf("after forget: %v, %+v", s, f)
			}
		})
	}
}

// A Job created again under the same name starts with nothing remembered.
func TestFailureLogStartsAfreshForANewJobOfTheSameName(t *testing.T) {
	l := newFailureLog()
	old, cur := newJob(), newJob()
	cur.UID = "uid-work-2"
	l.observe("ns/work", old, []*corev1.Pod{newPod("a", corev1.PodFailed, finishedAgo(time.Minute))})
	if s, f := l.observe("ns/work", cur, nil); !s.IsZero() || len(f) != 0 {
		t.Fatalf("the new Job inherited %v, %+v", s, f)
	}
}
