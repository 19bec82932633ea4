package defaulting

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Default applies Kubernetes' defaults to obj in place. Types it does not know
// (custom resources, unstructured objects) are left untouched.
//
// Callers that create Jobs should assign metadata.uid before calling Default:
// like Kubernetes' job strategy, Default then generates the Job's selector and
// template labels from the uid unless spec.manualSelector is true.
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	// core/v1
	case *corev1.Pod:
		defaultPod(o)
	case *corev1.PodTemplate:
		defaultPodTemplateSpec(&o.Template)
	case *corev1.ReplicationController:
		defaultReplicationController(o)
	case *corev1.Service:
		defaultService(o)
	case *corev1.Endpoints:
		defaultEndpoints(o)
	case *corev1.Secret:
		defaultSecret(o)
	case *corev1.Namespace:
		defaultNamespace(o)
	case *corev1.Node:
		defaultNode(o)
	case *corev1.LimitRange:
		defaultLimitRange(o)
	case *corev1.ResourceQuota:
		defaultResourceList(o.Spec.Hard)
	case *corev1.PersistentVolumeClaim:
		defaultPersistentVolumeClaim(o)
	case *corev1.PersistentVolume:
		defaultPersistentVolume(o)

	// apps/v1
	case *appsv1.Deployment:
		defaultDeployment(o)
	case *appsv1.ReplicaSet:
		defaultReplicaSet(o)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *appsv1.DaemonSet:
		defaultDaemonSet(o)

	// batch/v1
	case *batchv1.Job:
		defaultJob(o)
	case *batchv1.CronJob:
		defaultCronJob(o)

	// rbac.authorization.k8s.io/v1
	case *rbacv1.RoleBinding:
		defaultRoleRef(&o.RoleRef)
		defaultSubjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		defaultRoleRef(&o.RoleRef)
		defaultSubjects(o.Subjects)

	// networking.k8s.io/v1
	case *networkingv1.NetworkPolicy:
		defaultNetworkPolicy(o)
	case *networkingv1.IngressClass:
		defaultIngressClass(o)

	// scheduling.k8s.io/v1
	case *schedulingv1.PriorityClass:
		defaultPriorityClass(o)

	// storage.k8s.io/v1
	case *storagev1.StorageClass:
		defaultStorageClass(o)

	// discovery.k8s.io/v1
	case *discoveryv1.EndpointSlice:
		defaultEndpointSlice(o)

	// Kinds Kubernetes gives no defaults worth applying here; listed so the
	// switch documents that they were considered.
	case *policyv1.PodDisruptionBudget, *coordinationv1.Lease, *corev1.ConfigMap,
		*corev1.ServiceAccount, *corev1.Event, *rbacv1.Role, *rbacv1.ClusterRole, *networkingv1.Ingress:
	}
}

func ptrTo[T any](v T) *T { return &v }
