package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The status rules of the workloads, as Kubernetes' Validate*StatusUpdate
// (v1.33): counts are never negative, the parts of status.replicas never
// exceed it, available pods are ready ones, and a collision count never
// goes down (the controllers build their revision names from it). A status
// write checks these only: its spec is the stored one, not judged again.

// count is one status counter, by its field name.
type count struct {
	name  string
	value int64
}

// nonNegatives checks that each counter is at least 0.
func nonNegatives(statusPath *field.Path, counts ...count) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		errs = append(errs, nonNegative(c.value, statusPath.Child(c.name))...)
	}
	return errs
}

// partsOfReplicas checks that each of parts is at most status.replicas.
func partsOfReplicas(statusPath *field.Path, replicas int32, parts ...count) field.ErrorList {
	var errs field.ErrorList
	for _, c := range parts {
		if c.value > int64(replicas) {
			errs = append(errs, field.Invalid(statusPath.Child(c.name), c.value, "cannot be greater than status.replicas"))
		}
	}
	return errs
}

// availableWithinReady checks that available pods are at most the ready
// ones; msg is the kind's wording.
func availableWithinReady(statusPath *field.Path, available, ready int32, msg string) field.ErrorList {
	if available > ready {
		return field.ErrorList{field.Invalid(statusPath.Child("availableReplicas"), available, msg)}
	}
	return nil
}

// collisionCount checks a status's collisionCount: not negative, and not
// lower than the stored one (nil counts as 0).
func collisionCount(newCount, oldCount *int32, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if newCount != nil {
		errs = nonNegative(int64(*newCount), fldPath)
	}
	return append(errs, notDecremented(newCount, oldCount, fldPath)...)
}

// notDecremented refuses a collisionCount lower than the stored one.
func notDecremented(newCount, oldCount *int32, fldPath *field.Path) field.ErrorList {
	if oldCount == nil || newCount != nil && *newCount >= *oldCount {
		return nil
	}
	value := int32(0)
	if newCount != nil {
		value = *newCount
	}
	return field.ErrorList{field.Invalid(fldPath, value, "cannot be decremented")}
}

func validateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	p, s := field.NewPath("status"), d.Status
	errs := nonNegatives(p, count{"observedGeneration", s.ObservedGeneration}, count{"replicas", int64(s.Replicas)},
		count{"updatedReplicas", int64(s.UpdatedReplicas)}, count{"readyReplicas", int64(s.ReadyReplicas)},
		count{"availableReplicas", int64(s.AvailableReplicas)}, count{"unavailableReplicas", int64(s.UnavailableReplicas)})
	if s.CollisionCount != nil {
		errs = append(errs, nonNegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	// Unavailable pods count what is missing, so they may outnumber
	// status.replicas.
	errs = append(errs, partsOfReplicas(p, s.Replicas, count{"updatedReplicas", int64(s.UpdatedReplicas)},
		count{"readyReplicas", int64(s.ReadyReplicas)}, count{"availableReplicas", int64(s.AvailableReplicas)})...)
	errs = append(errs, availableWithinReady(p, s.AvailableReplicas, s.ReadyReplicas, "cannot be greater than readyReplicas")...)
	return append(errs, notDecremented(s.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

// replicaCounts is the status of a ReplicaSet and a ReplicationController,
// which Kubernetes checks alike.
func replicaCounts(replicas, fullyLabeled, ready, available int32, observedGeneration int64) field.ErrorList {
	p := field.NewPath("status")
	errs := nonNegatives(p, count{"replicas", int64(replicas)}, count{"fullyLabeledReplicas", int64(fullyLabeled)},
		count{"readyReplicas", int64(ready)}, count{"availableReplicas", int64(available)},
		count{"observedGeneration", observedGeneration})
	errs = append(errs, partsOfReplicas(p, replicas, count{"fullyLabeledReplicas", int64(fullyLabeled)},
		count{"readyReplicas", int64(ready)}, count{"availableReplicas", int64(available)})...)
	return append(errs, availableWithinReady(p, available, ready, "cannot be greater than readyReplicas")...)
}

func validateReplicaSetStatusUpdate(rs, _ *appsv1.ReplicaSet) field.ErrorList {
	s := rs.Status
	return replicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration)
}

func validateReplicationControllerStatusUpdate(rc, _ *corev1.ReplicationController) field.ErrorList {
	s := rc.Status
	return replicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration)
}

func validateStatefulSetStatusUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	p, s := field.NewPath("status"), ss.Status
	errs := nonNegatives(p, count{"replicas", int64(s.Replicas)}, count{"readyReplicas", int64(s.ReadyReplicas)},
		count{"currentReplicas", int64(s.CurrentReplicas)}, count{"updatedReplicas", int64(s.UpdatedReplicas)},
		count{"availableReplicas", int64(s.AvailableReplicas)}, count{"observedGeneration", s.ObservedGeneration})
	if s.CollisionCount != nil {
		errs = append(errs, nonNegative(int64(*s.CollisionCount), p.Child("collisionCount"))...)
	}
	errs = append(errs, partsOfReplicas(p, s.Replicas, count{"readyReplicas", int64(s.ReadyReplicas)},
		count{"currentReplicas", int64(s.CurrentReplicas)}, count{"updatedReplicas", int64(s.UpdatedReplicas)},
		count{"availableReplicas", int64(s.AvailableReplicas)})...)
	errs = append(errs, availableWithinReady(p, s.AvailableReplicas, s.ReadyReplicas, "cannot be greater than status.readyReplicas")...)
	return append(errs, notDecremented(s.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

func validateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	p, s := field.NewPath("status"), ds.Status
	errs := nonNegatives(p, count{"currentNumberScheduled", int64(s.CurrentNumberScheduled)},
		count{"numberMisscheduled", int64(s.NumberMisscheduled)}, count{"desiredNumberScheduled", int64(s.DesiredNumberScheduled)},
		count{"numberReady", int64(s.NumberReady)}, count{"observedGeneration", s.ObservedGeneration},
		count{"updatedNumberScheduled", int64(s.UpdatedNumberScheduled)}, count{"numberAvailable", int64(s.NumberAvailable)},
		count{"numberUnavailable", int64(s.NumberUnavailable)})
	return append(errs, collisionCount(s.CollisionCount, old.Status.CollisionCount, p.Child("collisionCount"))...)
}

// validatePDBStatusUpdate is Kubernetes' policy/v1 status rule for a
// PodDisruptionBudget, whose status the disruption controller writes and
// the eviction API spends.
func validatePDBStatusUpdate(pdb, _ *policyv1.PodDisruptionBudget) field.ErrorList {
	p, s := field.NewPath("status"), pdb.Status
	errs := metav1validation.ValidateConditions(s.Conditions, p.Child("conditions"))
	return append(errs, nonNegatives(p, count{"disruptionsAllowed", int64(s.DisruptionsAllowed)},
		count{"currentHealthy", int64(s.CurrentHealthy)}, count{"desiredHealthy", int64(s.DesiredHealthy)},
		count{"expectedPods", int64(s.ExpectedPods)})...)
}
