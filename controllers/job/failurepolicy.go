package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failurePolicyMatch is the first spec.podFailurePolicy rule a failed pod matches.
type failurePolicyMatch struct {
	action  batchv1.PodFailurePolicyAction
	message string
}

// matchFailurePolicy evaluates the Job's pod failure policy on a failed pod; ok is false when the
// Job has no policy or no rule matches (the failure then counts, as with action Count).
func matchFailurePolicy(job *batchv1.Job, pod *corev1.Pod) (failurePolicyMatch, bool) {
	pfp := job.Spec.PodFailurePolicy
	if pfp == nil || pod.Status.Phase != corev1.PodFailed {
		return failurePolicyMatch{}, false
	}
	for i, rule := range pfp.Rules {
		if req := rule.OnExitCodes; req != nil {
			if c := exitCodeMatch(pod, req); c != nil {
				return failurePolicyMatch{action: rule.Action, message: fmt.Sprintf(
					"Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
					c.Name, pod.Namespace, pod.Name, c.State.Terminated.ExitCode, rule.Action, i)}, true
			}
			continue
		}
		for _, pattern := range rule.OnPodConditions {
			status := pattern.Status
			if status == "" {
				status = corev1.ConditionTrue
			}
			for _, cond := range pod.Status.Conditions {
				if cond.Type == pattern.Type && cond.Status == status {
					return failurePolicyMatch{action: rule.Action, message: fmt.Sprintf(
						"Pod %s/%s has condition %s matching %s rule at index %d", pod.Namespace, pod.Name, cond.Type, rule.Action, i)}, true
				}
			}
		}
	}
	return failurePolicyMatch{}, false
}

// exitCodeMatch returns the first terminated container whose exit code meets the requirement.
// Containers that succeeded (exit code 0) never match, as in Kubernetes.
func exitCodeMatch(pod *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for i := range statuses {
		s := &statuses[i]
		t := s.State.Terminated
		if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != s.Name) {
			continue
		}
		in := slices.Contains(req.Values, t.ExitCode)
		if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
			return s
		}
	}
	return nil
}
