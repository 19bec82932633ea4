package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorTexts is errs as the API's Status message lists them, in order.
func errorTexts(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "\n")
}

// TestWorkloadStatusUpdates: a workload's status write is checked as
// Kubernetes' Validate*StatusUpdate checks it, with its messages, and its
// spec (the stored one) is not judged again.
func TestWorkloadStatusUpdates(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"}
	deploy := func(s appsv1.DeploymentStatus) *appsv1.Deployment {
		// A spec Kubernetes would refuse today (no selector, no
		// template): a status write must not be refused for it.
		return &appsv1.Deployment{ObjectMeta: meta, Status: s}
	}
	rs := func(s appsv1.ReplicaSetStatus) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: meta, Status: s}
	}
	rc := func(s corev1.ReplicationControllerStatus) *corev1.ReplicationController {
		return &corev1.ReplicationController{ObjectMeta: meta, Status: s}
	}
	sts := func(s appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta, Status: s}
	}
	ds := func(s appsv1.DaemonSetStatus) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: meta, Status: s}
	}
	pdb := func(s policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: meta, Status: s}
	}

	cases := []struct {
		name     string
		new, old runtime.Object
		want     string
	}{
		{"deployment status within its replicas", deploy(appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 5, CollisionCount: i32(1)}),
			deploy(appsv1.DeploymentStatus{CollisionCount: i32(1)}), ""},
		{"deployment counts beyond replicas", deploy(appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 3}), deploy(appsv1.DeploymentStatus{}),
			"status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas\n" +
				"status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas"},
		{"deployment negative counts and a lower collision count", deploy(appsv1.DeploymentStatus{ObservedGeneration: -1, UnavailableReplicas: -1, CollisionCount: i32(1)}),
			deploy(appsv1.DeploymentStatus{CollisionCount: i32(2)}),
			"status.observedGeneration: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.unavailableReplicas: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.collisionCount: Invalid value: 1: cannot be decremented"},
		{"deployment collision count dropped", deploy(appsv1.DeploymentStatus{}), deploy(appsv1.DeploymentStatus{CollisionCount: i32(2)}),
			"status.collisionCount: Invalid value: 0: cannot be decremented"},
		{"replicaset", rs(appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 2}), rs(appsv1.ReplicaSetStatus{}),
			"status.fullyLabeledReplicas: Invalid value: 3: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"},
		{"replicaset negative", rs(appsv1.ReplicaSetStatus{Replicas: -1, ObservedGeneration: -2}), rs(appsv1.ReplicaSetStatus{}),
			// As upstream: the zeros then exceed status.replicas too.
			"status.replicas: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.observedGeneration: Invalid value: -2: must be greater than or equal to 0\n" +
				"status.fullyLabeledReplicas: Invalid value: 0: cannot be greater than status.replicas\n" +
				"status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas"},
		{"replicationcontroller", rc(corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}), rc(corev1.ReplicationControllerStatus{}),
			"status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas"},
		{"replicationcontroller fine", rc(corev1.ReplicationControllerStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1}), rc(corev1.ReplicationControllerStatus{}), ""},
		{"statefulset", sts(appsv1.StatefulSetStatus{Replicas: 2, CurrentReplicas: 3, ReadyReplicas: 1, AvailableReplicas: 2, CollisionCount: i32(0)}),
			sts(appsv1.StatefulSetStatus{CollisionCount: i32(1)}),
			"status.currentReplicas: Invalid value: 3: cannot be greater than status.replicas\n" +
				"status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas\n" +
				"status.collisionCount: Invalid value: 0: cannot be decremented"},
		{"daemonset", ds(appsv1.DaemonSetStatus{NumberMisscheduled: -1, NumberUnavailable: 4, CollisionCount: i32(-1)}), ds(appsv1.DaemonSetStatus{}),
			"status.numberMisscheduled: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.collisionCount: Invalid value: -1: must be greater than or equal to 0"},
		{"poddisruptionbudget", pdb(policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: -1, ExpectedPods: 2,
			Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: "Maybe", Reason: "SufficientPods", LastTransitionTime: metav1.Now()}}}),
			pdb(policyv1.PodDisruptionBudgetStatus{}),
			`status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"` + "\n" +
				"status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorTexts(ValidateStatusUpdate(tc.new, tc.old)); got != tc.want {
				t.Errorf("errors:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
