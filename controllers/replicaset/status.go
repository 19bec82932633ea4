package replicaset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiffkube/skiff/controllers/podstate"
)

func secondsDuration(s int32) time.Duration { return time.Duration(s) * time.Second }

// calculateStatus derives the status from the claimed active pods. status.terminatingReplicas is
// left out (and cleared if an earlier version wrote it): it belongs to the
// DeploymentReplicaSetTerminatingReplicas feature, alpha and off by default in Kubernetes v1.33.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if podstate.IsReady(p) {
			ready++
			if podstate.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.TerminatingReplicas = nil
	st.ObservedGeneration = rs.Generation

	failure := -1
	for i, cnd := range st.Conditions {
		if cnd.Type == appsv1.ReplicaSetReplicaFailure {
			failure = i
		}
	}
	switch {
	case manageErr != nil && failure < 0:
		reason := "FailedCreate"
		if int(replicasOf(rs)) < len(pods) {
			reason = "FailedDelete"
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure >= 0:
		st.Conditions = append(st.Conditions[:failure:failure], st.Conditions[failure+1:]...)
	}
	return st
}

// updateStatus writes status if it changed, retrying once on a conflict against a fresh copy.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if apiequality.Semantic.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	client := c.rsClient(rs.Namespace)
	cur := rs
	for attempt := 0; ; attempt++ {
		next := cur.DeepCopy()
		next.Status = status
		// observedGeneration must describe the object we write, not a newer one fetched on conflict.
		updated, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return nil, fmt.Errorf("update status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		fresh, gerr := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, fmt.Errorf("update status of replicaset %s/%s: %w", rs.Namespace, rs.Name, gerr)
		}
		if fresh.UID != rs.UID {
			return nil, fmt.Errorf("replicaset %s/%s was replaced while updating status", rs.Namespace, rs.Name)
		}
		cur = fresh
	}
}
