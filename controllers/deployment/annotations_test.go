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
