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
//
// Without fail, as Kubernetes' taint manager writes it (UpdatePodCondition),
// a DisruptionTarget condition already there with another status, reason or
// message is replaced, keeping its lastTransitionTime when it was True
// already: the reason says what is deleting the pod now (a pod the kubelet
// evicted, TerminationByKubelet, then removed by a NoExecute taint reads
// DeletionByTaintManager). Nothing is written when it says that already.
func MarkDisrupted(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, fieldManager, reason, message string, fail bool) error {
	status := corev1apply.PodStatus()
	transition := metav1.Now()
	switch old := disruptionTarget(pod); {
	case fail && IsTerminal(pod):
		return nil
	case fail:
		status.WithPhase(corev1.PodFailed)
	case reason == "":
		return nil
	case old != nil && old.Status == corev1.ConditionTrue && old.Reason == reason && old.Message == message:
		return nil
	case old != nil && old.Status == corev1.ConditionTrue && !old.LastTransitionTime.IsZero():
		transition = old.LastTransitionTime
	}
	if reason != "" {
		status.WithConditions(corev1apply.PodCondition().
			WithType(corev1.DisruptionTarget).WithStatus(corev1.ConditionTrue).
			WithReason(reason).WithMessage(message).WithLastTransitionTime(transition))
	}
	apply := corev1apply.Pod(pod.Name, pod.Namespace).WithStatus(status)
	_, err := client.CoreV1().Pods(pod.Namespace).ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark pod %s/%s disrupted: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func disruptionTarget(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.DisruptionTarget {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
