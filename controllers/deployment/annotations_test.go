package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

// A rollout step that leaves a ReplicaSet at its size does not write it, even when its size
// annotations are stale (maxSurge edited mid-rollout, or the strategy changed to Recreate):
// Kubernetes' rollout paths go through scaleReplicaSetAndRecordEvent, which returns early for an
// unchanged size. Only a resize, or the proportional spread of a scaling event, rewrites them.
func TestRolloutStepLeavesSameSizeReplicaSetUnwritten(t *testing.T) {
	recreate := func(d *appsv1.Deployment) *appsv1.Deployment {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		return d
	}
	tests := []struct {
		name string
		objs func() []runtime.Object
	}{
		{"rolling: the new replicaset held at the surge cap", func() []runtime.Object {
			d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
			n := rsFor(d, "v2", 1, 0, 2, time.Minute)
			n.Annotations[MaxReplicasAnnotation] = "5" // written while maxSurge was 2
			return []runtime.Object{d, rsFor(d, "v1", 3, 3, 1, time.Hour), n}
		}},
		{"recreate: the new replicaset already at full size", func() []runtime.Object {
			d := recreate(newDeployment(3, "v2", intstr.FromInt32(0), intstr.FromInt32(0)))
			n := rsFor(d, "v2", 3, 3, 2, time.Minute)
			n.Annotations[MaxReplicasAnnotation] = "4" // written under RollingUpdate with maxSurge 1
			return []runtime.Object{d, rsFor(d, "v1", 0, 0, 1, time.Hour), n}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.objs()...)
			fx.sync(t)
			if writes := controllertest.Filter(fx.client.Actions(), "update", "replicasets"); len(writes) != 0 {
				t.Errorf("%d replicaset writes, want none: %v", len(writes), writes)
			}
		})
	}
}

// The size annotations are the controller's own record, read as Kubernetes'
// getNonNegativeInt32FromAnnotation reads them: a value that is not a plain non-negative int32 (a
// sign, a negative, too large, not a number) counts as no annotation, so it neither makes a
// scaling event of a rollout nor skews a proportional scale.
func TestSizeAnnotationsMustBeNonNegativeInt32(t *testing.T) {
	for _, v := range []string{"-1", "+2", "2147483648", "two"} {
		t.Run("desired-replicas "+v+" is no scaling event", func(t *testing.T) {
			d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
			old := rsFor(d, "v1", 3, 3, 1, time.Hour)
			old.Annotations[DesiredReplicasAnnotation] = v
			fx := newFixture(t, d, old)
			fx.sync(t)
			n := fx.replicaSets(t)[rsName("v2")]
			if n == nil || *n.Spec.Replicas != 1 {
				t.Fatalf("new replicaset = %v, want it created with 1 (a rollout step)", n)
			}
		})
		t.Run("max-replicas "+v+" falls back to status.replicas", func(t *testing.T) {
			d := newDeployment(12, "v2", intstr.FromInt32(0), intstr.FromInt32(1))
			d.Status.Replicas = 10
			rs := rsFor(d, "v1", 5, 5, 1, time.Hour)
			rs.Annotations[MaxReplicasAnnotation] = v
			// 5 of 10 become 5*12/10 = 6: one more.
			if got := replicaSetFraction(rs, d); got != 1 {
				t.Errorf("fraction = %d, want 1", got)
			}
		})
	}
}
