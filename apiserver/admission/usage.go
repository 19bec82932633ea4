package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Usage is what one object counts against a ResourceQuota: object counts
// ("pods", "count/deployments.apps" …) and, for pods, compute requests and
// limits; for services node ports and load balancers. Pods that have
// finished count for nothing, as in Kubernetes.
func Usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	one := resource.MustParse("1")
	u := corev1.ResourceList{corev1.ResourceName(countName(gr)): one.DeepCopy()}
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return u
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return corev1.ResourceList{}
		}
		u[corev1.ResourcePods] = one.DeepCopy()
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			u[requestsName(name)] = q.DeepCopy()
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
				u[name] = q.DeepCopy() // "cpu" is "requests.cpu"
			}
		}
		for name, q := range resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}) {
			u[corev1.ResourceName("limits."+string(name))] = q.DeepCopy()
		}
	case schema.GroupResource{Resource: "services"}:
		u[corev1.ResourceServices] = one.DeepCopy()
		if svc, ok := obj.(*corev1.Service); ok {
			ports := int64(0)
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				ports = int64(len(svc.Spec.Ports))
			}
			u[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
			lbs := int64(0)
			if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				lbs = 1
			}
			u[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(lbs, resource.DecimalSI)
		}
	case schema.GroupResource{Resource: "configmaps"}, schema.GroupResource{Resource: "secrets"},
		schema.GroupResource{Resource: "persistentvolumeclaims"}, schema.GroupResource{Resource: "resourcequotas"},
		schema.GroupResource{Resource: "replicationcontrollers"}:
		u[corev1.ResourceName(gr.Resource)] = one.DeepCopy()
	}
	return u
}

// countName is the object-count quota name: count/<resource>[.<group>].
func countName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return "count/" + gr.Resource
	}
	return "count/" + gr.Resource + "." + gr.Group
}

func requestsName(name corev1.ResourceName) corev1.ResourceName {
	if strings.HasPrefix(string(name), "requests.") {
		return name
	}
	return corev1.ResourceName("requests." + string(name))
}
