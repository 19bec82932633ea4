package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// rolloutRolling moves one step of a rolling update: grow the new ReplicaSet within maxSurge, else
// shrink old ones within maxUnavailable, else (when complete) prune history. Each step ends with
// status; the next step waits for the ReplicaSet controller to report pods.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet{}, old...), newRS)

	if scaled, updated, err := c.reconcileNewReplicaSet(ctx, all, newRS, d); err != nil {
		return err
	} else if scaled {
		newRS = updated
		return c.syncRolloutStatus(ctx, append(old, newRS), newRS, d)
	}
	if scaled, err := c.reconcileOldReplicaSets(ctx, all, filterActive(old), newRS, d); err != nil {
		return err
	} else if scaled {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if rsReplicas(newRS) == replicas(d) {
		return false, newRS, nil
	}
	if rsReplicas(newRS) > replicas(d) {
		return c.resizeReplicaSet(ctx, newRS, replicas(d), d)
	}
	return c.resizeReplicaSet(ctx, newRS, newRSReplicas(d, all, newRS), d)
}

// reconcileOldReplicaSets scales old ReplicaSets down as far as availability allows. Unhealthy old
// pods go first: removing them costs no availability.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, oldActive []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumSpec(oldActive) == 0 {
		return false, nil
	}
	minAvailable := replicas(d) - maxUnavailable(d)
	newUnavailable := rsReplicas(newRS)
	if newRS != nil {
		newUnavailable -= newRS.Status.AvailableReplicas
	}
	maxScaledDown := sumSpec(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Step 1: unhealthy replicas of old ReplicaSets, oldest ReplicaSet first.
	old := sortedByCreation(oldActive)
	var cleaned int32
	for i, rs := range old {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := rsReplicas(rs) - rs.Status.AvailableReplicas
		if rsReplicas(rs) == 0 || unhealthy <= 0 {
			continue
		}
		down := min(maxScaledDown-cleaned, unhealthy)
		_, updated, err := c.resizeReplicaSet(ctx, rs, rsReplicas(rs)-down, d)
		if err != nil {
			return false, err
		}
		old[i] = updated
		cleaned += down
	}
	// Step 2: available replicas, while the total available stays at or above minAvailable.
	all = append(append([]*appsv1.ReplicaSet{}, old...), newRS)
	available := sumStatus(all, func(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	var scaled int32
	if available > minAvailable {
		budget := available - minAvailable
		for _, rs := range old {
			if scaled >= budget {
				break
			}
			if rsReplicas(rs) == 0 {
				continue
			}
			down := min(rsReplicas(rs), budget-scaled)
			if _, _, err := c.resizeReplicaSet(ctx, rs, rsReplicas(rs)-down, d); err != nil {
				return false, err
			}
			scaled += down
		}
	}
	return cleaned+scaled > 0, nil
}

// rolloutRecreate: scale every old ReplicaSet to zero, wait for their pods to be gone, then create or
// scale up the new one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet{}, old...), newRS)
	scaledDown := false
	for _, rs := range filterActive(old) {
		scaled, _, err := c.resizeReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if running, err := c.oldPodsRunning(newRS, old); err != nil {
		return err
	} else if running {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = c.replicaSets(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet{}, old...), newRS)
	}
	if scaled, updated, err := c.resizeReplicaSet(ctx, newRS, replicas(d), d); err != nil {
		return err
	} else if scaled {
		return c.syncRolloutStatus(ctx, append(old, updated), updated, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether any pod of an old ReplicaSet may still be running.
func (c *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) (bool, error) {
	if sumStatus(old, func(s *appsv1.ReplicaSetStatus) int32 { return s.Replicas }) > 0 {
		return true, nil
	}
	for _, rs := range old {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		pods, err := c.podLister.Pods(rs.Namespace).List(labels.Everything())
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			ref := metaController(p)
			if ref == nil || ref.UID != rs.UID {
				continue
			}
			switch p.Status.Phase {
			case corev1.PodFailed, corev1.PodSucceeded:
			default:
				// Pending, Running and Unknown pods may still hold resources or serve traffic.
				return true, nil
			}
		}
	}
	return false, nil
}
