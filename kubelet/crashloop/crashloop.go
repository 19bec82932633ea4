package crashloop

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Reason is the waiting reason of a container backing off.
const Reason = "CrashLoopBackOff"

const (
	// initialDelay is the first back-off (the kubelet's
	// initialCrashLoopBackOff).
	initialDelay = 10 * time.Second
	// maxDelay caps the doubling (MaxCrashLoopBackOff).
	maxDelay = 5 * time.Minute
	// stableAfter is how long an attempt must run for its exit to start
	// the back-off afresh: the kubelet forgets a container's back-off
	// when more than 600s passed between its restart and its next exit.
	stableAfter = 10 * time.Minute
)

// Next says how long a container waits to be restarted after an attempt
// that ran for ran and was started at back-off level exited, and the level
// of the attempt that follows. Level 0 waits nothing, level 1 10s, each
// further level twice as long, at most 5m; an attempt that ran for more
// than 10 minutes counts as level 0 whatever its level. The first attempt
// has level 0 — the kubelet keeps no back-off for a container before it
// first restarts it, so that restart is immediate — and a runtime keeps
// each attempt's level with it (a label, a field) to pass here when that
// attempt exits.
func Next(level int, ran time.Duration) (delay time.Duration, next int) {
	if ran > stableAfter || level < 0 {
		level = 0
	}
	switch {
	case level == 0:
		delay = 0
	case level <= 5: // 10s << 5 is past the cap already
		delay = min(initialDelay<<uint(level-1), maxDelay)
	default:
		delay = maxDelay
	}
	return delay, level + 1
}

// Waiting is the state of container c of pod while it backs off for delay,
// worded as the kubelet's ("back-off 20s restarting failed
// container=app pod=web_default(uid)"). The attempt that exited is the
// container's lastState. A delay of 0 has no waiting state: the container
// is restarted at once.
func Waiting(pod *corev1.Pod, c string, delay time.Duration) *corev1.ContainerStateWaiting {
	return &corev1.ContainerStateWaiting{
		Reason:  Reason,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c, pod.Name, pod.Namespace, pod.UID),
	}
}
