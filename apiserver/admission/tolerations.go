package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// defaultTolerationSeconds is how long a pod stays on a not-ready or
// unreachable node before the node lifecycle controller evicts it, unless
// the pod says otherwise (Kubernetes' --default-not-ready-toleration-seconds
// and --default-unreachable-toleration-seconds).
const defaultTolerationSeconds int64 = 300

// defaultTolerations adds Kubernetes' DefaultTolerationSeconds tolerations:
// a pod that does not tolerate the not-ready or unreachable NoExecute taint
// tolerates it for 300 s, so a node that is briefly NotReady (an agent
// restarting) does not lose its pods at once.
func (c *Chain) defaultTolerations(_ context.Context, a *Attributes) error {
	pod := a.Object.(*corev1.Pod)
	tolerates := func(key string) bool {
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return true
			}
		}
		return false
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !tolerates(key) {
			secs := defaultTolerationSeconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs})
		}
	}
	return nil
}
