package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RollbackToAnnotation carries extensions/v1beta1's (and apps/v1beta1's) spec.rollbackTo.revision on
// a Deployment stored as apps/v1: 0 means the previous revision.
const RollbackToAnnotation = appsv1.DeprecatedRollbackTo // "deprecated.deployment.rollback.to"

// Rollback event reasons, as Kubernetes spells them.
const (
	RollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	RollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	RollbackDone              = "DeploymentRollback"
)

// rollbackTo returns the revision a Deployment asks to be rolled back to; a value that is not a
// number is ignored, as in Kubernetes.
func rollbackTo(d *appsv1.Deployment) (int64, bool) {
	v := d.Annotations[RollbackToAnnotation]
	if v == "" {
		return 0, false
	}
	rev, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return rev, true
}

// rollback copies the template (and the annotations kubectl rollout history shows) of the ReplicaSet
// at the requested revision into the Deployment and removes the request in the same update. The next
// sync rolls the template out like any other edit. A revision that cannot be found, or whose template
// is already the Deployment's, only removes the request, with a warning event.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, to int64) error {
	newRS, old, err := c.replicaSets(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := old
	if newRS != nil {
		all = append(append([]*appsv1.ReplicaSet{}, old...), newRS)
	}
	if to == 0 {
		if to = lastRevision(all); to == 0 {
			c.recorder.Event(d, corev1.EventTypeWarning, RollbackRevisionNotFound, "Unable to find last revision.")
			return c.clearRollbackTo(ctx, d)
		}
	}
	for _, rs := range all {
		if v, err := parseRevision(rs.Annotations); err != nil || v != to {
			continue
		}
		if equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Event(d, corev1.EventTypeWarning, RollbackTemplateUnchanged,
				fmt.Sprintf("The rollback revision contains the same template as current deployment %q", d.Name))
			return c.clearRollbackTo(ctx, d)
		}
		setTemplateFrom(d, rs)
		setAnnotationsFrom(d, rs)
		if err := c.clearRollbackTo(ctx, d); err != nil {
			return err
		}
		c.recorder.Event(d, corev1.EventTypeNormal, RollbackDone, fmt.Sprintf("Rolled back deployment %q to revision %d", d.Name, to))
		return nil
	}
	c.recorder.Event(d, corev1.EventTypeWarning, RollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return c.clearRollbackTo(ctx, d)
}

// clearRollbackTo writes the Deployment (with whatever template the rollback chose) without the
// request, guarded by the resourceVersion this sync read.
func (c *Controller) clearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, RollbackToAnnotation)
	_, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("roll back deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// lastRevision is the second highest revision among the ReplicaSets (the one before the current),
// or 0 if there is none; revisions that are not numbers are skipped.
func lastRevision(rsList []*appsv1.ReplicaSet) int64 {
	var highest, second int64
	for _, rs := range rsList {
		v, err := parseRevision(rs.Annotations)
		switch {
		case err != nil:
		case v >= highest:
			second, highest = highest, v
		case v > second:
			second = v
		}
	}
	return second
}

// setTemplateFrom makes the ReplicaSet's pod template the Deployment's, without the
// pod-template-hash label only ReplicaSets carry.
func setTemplateFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	tmpl := rs.Spec.Template.DeepCopy()
	delete(tmpl.Labels, PodTemplateHashLabel)
	d.Spec.Template.ObjectMeta = tmpl.ObjectMeta
	d.Spec.Template.Spec = tmpl.Spec
}

// setAnnotationsFrom gives the Deployment the annotations of the ReplicaSet it rolls back to (its
// change-cause among them) in place of its own, keeping those that describe the Deployment itself;
// otherwise the current annotations would be copied onto the rolled-back ReplicaSet.
func setAnnotationsFrom(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if annotationsNotCopied[k] {
			kept[k] = v
		}
	}
	for k, v := range rs.Annotations {
		if !annotationsNotCopied[k] {
			kept[k] = v
		}
	}
	d.Annotations = kept
}
