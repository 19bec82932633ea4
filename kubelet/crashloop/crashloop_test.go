package crashloop

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		level     int
		ran       time.Duration
		delay     time.Duration
		nextLevel int
	}{
		{"the first exit is restarted at once", 0, time.Second, 0, 1},
		{"the second exit waits 10s", 1, time.Second, 10 * time.Second, 2},
		{"each exit in turn doubles it", 2, time.Second, 20 * time.Second, 3},
		{"sixth exit", 5, time.Second, 160 * time.Second, 6},
		{"capped at 5m", 6, time.Second, 5 * time.Minute, 7},
		{"stays capped", 40, time.Second, 5 * time.Minute, 41},
		{"ten minutes of running are not yet stable", 3, 10 * time.Minute, 40 * time.Second, 4},
		{"more than ten minutes are restarted at once", 7, 10*time.Minute + time.Second, 0, 1},
		{"the exit after a stable run waits 10s again", 1, time.Second, 10 * time.Second, 2},
		{"a negative level (a bad label) counts as 0", -3, time.Second, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delay, next := Next(tc.level, tc.ran)
			if delay != tc.delay || next != tc.nextLevel {
				t.Errorf("Next(%d, %s) = %s, %d; want %s, %d", tc.level, tc.ran, delay, next, tc.delay, tc.nextLevel)
			}
		})
	}
}

func TestWaitingIsWordedAsTheKubelets(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u-1"}}
	w := Waiting(pod, "app", 5*time.Minute)
	if w.Reason != "CrashLoopBackOff" || w.Message != "back-off 5m0s restarting failed container=app pod=web_default(u-1)" {
		t.Errorf("Waiting = %+v", w)
	}
}
