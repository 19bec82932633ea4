package podstate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// MarkDisrupted applies to the pod's status what Kubernetes' controllers
// send before deleting a pod they disrupt, as fieldManager: the
// DisruptionTarget=True condition with reason and message (none when reason
// is empty), so a Job's podFailurePolicy and kubectl describe tell a
// disruption from a failure; and with fail, phase Failed, for a pod no
// kubelet will finish (then a pod already finished is left as it is). A pod
// already gone is not an error.
func MarkDisrupted(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, fieldManager, reason, message string, fail bool) error {
	status := corev1apply.PodStatus()
	switch {
	case fail && IsTerminal(pod):
		return nil
	case fail:
		status.WithPhase(corev1.PodFailed)
	case hasDisruptionTarget(pod) || reason == "":
		return nil
	}
	if reason != "" {
		status.WithConditions(corev1apply.PodCondition().
			WithType(corev1.DisruptionTarget).WithStatus(corev1.ConditionTrue).
			WithReason(reason).WithMessage(message).WithLastTransitionTime(metav1.Now()))
	}
	apply := corev1apply.Pod(pod.Name, pod.Namespace).WithStatus(status)
	_, err := client.CoreV1().Pods(pod.Namespace).ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s disrupted: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func hasDisruptionTarget(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
