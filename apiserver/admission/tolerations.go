package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTolerationSeconds is how long a pod stays bound to a node that
// became not-ready or unreachable before the node lifecycle controller
// evicts it, unless the pod says otherwise: Kubernetes' default (its
// DefaultTolerationSeconds admission plugin, --default-not-ready-
// toleration-seconds and --default-unreachable-toleration-seconds).
const DefaultTolerationSeconds int64 = 300

// defaultTolerations adds the not-ready and unreachable NoExecute
// tolerations of DefaultTolerationSeconds to a new pod that does not
// already tolerate those taints. Without them a node missing one lease
// renewal would have every pod on it deleted at once.
func (c *Chain) defaultTolerations(_ context.Context, a *Attributes) error {
	pod := a.Object.(*corev1.Pod)
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		if !noExecute {
			continue
		}
		// An empty key with operator Exists tolerates every taint.
		notReady = notReady || t.Key == corev1.TaintNodeNotReady || t.Key == ""
		unreachable = unreachable || t.Key == corev1.TaintNodeUnreachable || t.Key == ""
	}
	for _, missing := range []struct {
		key  string
		need bool
	}{{corev1.TaintNodeNotReady, !notReady}, {corev1.TaintNodeUnreachable, !unreachable}} {
		if missing.need {
			seconds := DefaultTolerationSeconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: missing.key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
				TolerationSeconds: &seconds,
			})
		}
	}
	return nil
}
