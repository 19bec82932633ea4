package deployment

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as Kubernetes spells them (kubectl and tooling match on them).
const (
	NewRSReason                = "NewReplicaSetCreated"
	FoundNewRSReason           = "FoundNewReplicaSet"
	RSUpdatedReason            = "ReplicaSetUpdated"
	NewRSAvailableReason       = "NewReplicaSetAvailable"
	TimedOutReason             = "ProgressDeadlineExceeded"
	FailedRSCreateReason       = "ReplicaSetCreateError"
	PausedReason               = "DeploymentPaused"
	ResumedReason              = "DeploymentResumed"
	MinimumReplicasAvailable   = "MinimumReplicasAvailable"
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

func metaController(o metav1.Object) *metav1.OwnerReference { return metav1.GetControllerOfNoCopy(o) }

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now)
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func getCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces the condition of that type unless status and reason are unchanged (then the
// old one, with its timestamps, stays). The transition time survives a change of reason only.
func setCondition(st *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	cur := getCondition(st, cond.Type)
	if cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason {
		return
	}
	if cur != nil && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, cond.Type)
	st.Conditions = append(st.Conditions, cond)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// calculateStatus derives the Deployment's replica counts from its ReplicaSets' statuses. It leaves
// out terminatingReplicas, as Kubernetes v1.33 does with the DeploymentReplicaSetTerminatingReplicas
// feature off (its default).
func (c *Controller) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	unavailable := max(sumSpec(all)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		ReadyReplicas:       sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	st.Conditions = append(st.Conditions, d.Status.Conditions...)
	if available >= replicas(d)-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, MinimumReplicasAvailable, "Deployment has minimum availability.", c.now()))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, MinimumReplicasUnavailable, "Deployment does not have minimum availability.", c.now()))
	}
	return st
}

// deploymentComplete: every replica is updated and available, and the controller has seen the spec.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	return st.UpdatedReplicas == replicas(d) && st.Replicas == replicas(d) &&
		st.AvailableReplicas == replicas(d) && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: the new status is closer to done than the old one.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		(st.Replicas-st.UpdatedReplicas) < (old.Replicas-old.UpdatedReplicas) ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

func (c *Controller) deploymentTimedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	cond := getCondition(st, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason == NewRSAvailableReason {
		return false
	}
	if cond.Reason == TimedOutReason {
		return true
	}
	deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(c.now())
}

// syncRolloutStatus writes status during a rollout, maintaining the Progressing condition.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := c.calculateStatus(all, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		// Messages name the new ReplicaSet, or the Deployment while there is none (Recreate waiting
		// for old pods to go), as Kubernetes words them.
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewRSAvailableReason,
				subject+" has successfully progressed.", c.now()))
		case deploymentProgressing(d, &st):
			cond := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, RSUpdatedReason,
				subject+" is progressing.", c.now())
			// Progress refreshes lastUpdateTime (the deadline's start) but not the transition time.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					cond.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, cond)
		case c.deploymentTimedOut(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, TimedOutReason,
				subject+" has timed out progressing.", c.now()))
		}
	}
	// Surface a ReplicaSet's failure to create pods (quota, admission) on the Deployment: the new
	// ReplicaSet's, else the oldest failing old one's, as Kubernetes' getReplicaFailures picks.
	failure := replicaFailure(newRS)
	for _, rs := range sortedByCreation(all) {
		if failure != nil {
			break
		}
		failure = replicaFailure(rs)
	}
	if failure != nil {
		setCondition(&st, appsv1.DeploymentCondition{
			Type: appsv1.DeploymentReplicaFailure, Status: failure.Status, Reason: failure.Reason, Message: failure.Message,
			LastUpdateTime: failure.LastTransitionTime, LastTransitionTime: failure.LastTransitionTime,
		})
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}

	if apiequality.Semantic.DeepEqual(d.Status, st) {
		c.requeueStuck(d, &st)
		return nil
	}
	cp := d.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return err
}

func replicaFailure(rs *appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	if rs == nil {
		return nil
	}
	for i := range rs.Status.Conditions {
		if rs.Status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}

// requeueStuck wakes the Deployment when its progress deadline would pass, since no event will.
func (c *Controller) requeueStuck(d *appsv1.Deployment, st *appsv1.DeploymentStatus) {
	cond := getCondition(st, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cond == nil || cond.Reason == NewRSAvailableReason || cond.Reason == TimedOutReason || deploymentComplete(d, st) {
		return
	}
	key := d.Namespace + "/" + d.Name
	after := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.now())
	if after < time.Second {
		c.queue.AddRateLimited(key)
		return
	}
	c.queue.AddAfter(key, after)
}

// checkPausedConditions records pause and resume in the Progressing condition, so the deadline does
// not run while the Deployment is paused.
func (c *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == TimedOutReason {
		return nil
	}
	pausedCond := cond != nil && cond.Reason == PausedReason
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedReason, "Deployment is paused", c.now()))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedReason, "Deployment is resumed", c.now()))
	default:
		return nil
	}
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*d = *updated
	return nil
}
