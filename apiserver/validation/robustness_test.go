package validation

import (
	"testing"

	"github.com/skiffkube/skiff/apiserver/defaulting"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

func allKinds() []func() runtime.Object {
	return []func() runtime.Object{
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &corev1.Service{} },
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.Secret{} },
		func() runtime.Object { return &corev1.Namespace{} },
		func() runtime.Object { return &corev1.Node{} },
		func() runtime.Object { return &corev1.ServiceAccount{} },
		func() runtime.Object { return &corev1.Endpoints{} },
		func() runtime.Object { return &corev1.Event{} },
		func() runtime.Object { return &corev1.ResourceQuota{} },
		func() runtime.Object { return &corev1.LimitRange{} },
		func() runtime.Object { return &appsv1.Deployment{} },
		func() runtime.Object { return &appsv1.ReplicaSet{} },
		func() runtime.Object { return &appsv1.DaemonSet{} },
		func() runtime.Object { return &appsv1.StatefulSet{} },
		func() runtime.Object { return &batchv1.Job{} },
		func() runtime.Object { return &batchv1.CronJob{} },
		func() runtime.Object { return &coordinationv1.Lease{} },
		func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		func() runtime.Object { return &eventsv1.Event{} },
		func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		func() runtime.Object { return &rbacv1.Role{} },
		func() runtime.Object { return &rbacv1.ClusterRole{} },
		func() runtime.Object { return &rbacv1.RoleBinding{} },
		func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		func() runtime.Object { return &schedulingv1.PriorityClass{} },
	}
}

// TestZeroObjectsAreRejectedNotPanicked: an empty object of every kind gets
// errors (at least a missing name), never a panic.
func TestZeroObjectsAreRejectedNotPanicked(t *testing.T) {
	for _, mk := range allKinds() {
		obj := mk()
		if errs := Validate(obj); len(errs) == 0 {
			t.Errorf("%T: empty object passed validation", obj)
		}
		defaulting.Default(obj)
		Validate(obj)
		ValidateUpdate(obj, mk())
	}
}

// TestRandomObjectsNeverPanic fills every kind with random content (nil
// pointers, odd strings, negative numbers) and runs defaulting and both
// validations on it: bad input must come back as errors.
func TestRandomObjectsNeverPanic(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 3).Funcs(
		// Quantities have unexported state randfill cannot set sensibly.
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000)-10, resource.DecimalSI)
		},
	)
	for round := 0; round < 10; round++ {
		for _, mk := range allKinds() {
			a, b := mk(), mk()
			f.Fill(a)
			f.Fill(b)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%T panicked: %v", a, r)
					}
				}()
				defaulting.Default(a)
				Validate(a)
				ValidateUpdate(a, b)
				ValidateUpdate(b, a)
			}()
		}
	}
}
