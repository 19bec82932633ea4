package admission

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// Usage is what one object counts against a ResourceQuota: object counts
// ("pods", "count/deployments.apps" …) and, for pods, compute requests and
// limits; for services node ports and load balancers; for claims
// requests.storage and the per-class <class>.storageclass.storage.k8s.io/
// requests.storage and persistentvolumeclaims. A pod that has finished,
// or whose deletion is past its grace period, still counts in count/pods
// (every pod stored) but for nothing else (PodHoldsQuota), as in
// Kubernetes.
func Usage(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	return UsageAt(gr, obj, time.Now())
}

// UsageAt is Usage judged at the time now.
func UsageAt(gr schema.GroupResource, obj runtime.Object, now time.Time) corev1.ResourceList {
	one := resource.MustParse("1")
	u := corev1.ResourceList{corev1.ResourceName(countName(gr)): one.DeepCopy()}
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		pod, ok := obj.(*corev1.Pod)
		if !ok || !PodHoldsQuota(pod, now) {
			return u
		}
		u[corev1.ResourcePods] = one.DeepCopy()
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			switch {
			case name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage,
				strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
				u[name] = q.DeepCopy() // "cpu" is "requests.cpu"
				u[requestsName(name)] = q.DeepCopy()
			case extendedResource(name):
				u[requestsName(name)] = q.DeepCopy() // extended resources have no bare or limits. quota
			}
		}
		for name, q := range resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{}) {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
				u[corev1.ResourceName("limits."+string(name))] = q.DeepCopy()
			}
		}
	case servicesResource:
		u[corev1.ResourceServices] = one.DeepCopy()
		if svc, ok := obj.(*corev1.Service); ok {
			ports := int64(0)
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				ports = int64(len(svc.Spec.Ports))
			}
			if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
				// Only the ports given a node port explicitly get one.
				ports = 0
				for _, p := range svc.Spec.Ports {
					if p.NodePort != 0 {
						ports++
					}
				}
			}
			u[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
			lbs := int64(0)
			if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				lbs = 1
			}
			u[corev1.ResourceServicesLoadBalancers] = *resource.NewQuantity(lbs, resource.DecimalSI)
		}
	case claimsResource:
		u[corev1.ResourcePersistentVolumeClaims] = one.DeepCopy()
		if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			class := volumehelpers.GetPersistentVolumeClaimClass(pvc)
			if class != "" {
				u[StorageClassResource(class, corev1.ResourcePersistentVolumeClaims)] = one.DeepCopy()
			}
			// A claim without a storage request is charged no storage:
			// the names are left out rather than set to zero, as
			// Kubernetes' claim evaluator leaves them.
			if storage, ok := claimStorage(pvc); ok {
				u[corev1.ResourceRequestsStorage] = storage.DeepCopy()
				if class != "" {
					u[StorageClassResource(class, corev1.ResourceRequestsStorage)] = storage.DeepCopy()
				}
			}
		}
	case schema.GroupResource{Resource: "configmaps"}, schema.GroupResource{Resource: "secrets"},
		schema.GroupResource{Resource: "resourcequotas"},
		schema.GroupResource{Resource: "replicationcontrollers"}:
		u[corev1.ResourceName(gr.Resource)] = one.DeepCopy()
	}
	return u
}

// ignoredResources are the kinds quota leaves alone, as Kubernetes' quota
// configuration ignores them (pkg/quota/v1/install DefaultIgnoredResources):
// events, in both of their API groups, have never been counted, and a
// quota that refused them would silence the events the cluster's own
// components record.
var ignoredResources = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// QuotaIgnores tells whether quota leaves objects of gr alone: admission
// charges them to no quota, and the quota controller counts them in none.
func QuotaIgnores(gr schema.GroupResource) bool { return ignoredResources[gr] }

// PodResource tells whether pods are what quota resource name measures, as
// Kubernetes' pod evaluator matches them: pods, count/pods, cpu, memory and
// ephemeral-storage (bare, requests. and limits.), hugepages-<size> (bare
// and requests.) and requests.<extended resource>.
func PodResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, "count/pods",
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage:
		return true
	}
	n := string(name)
	if strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(n, corev1.ResourceRequestsHugePagesPrefix) {
		return true
	}
	rest, ok := strings.CutPrefix(n, corev1.DefaultResourceRequestsPrefix)
	return ok && extendedResource(corev1.ResourceName(rest))
}

// extendedResource tells whether a resource a container asks for is an
// extended one: domain-qualified outside kubernetes.io.
func extendedResource(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, corev1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix)
}

// PodHoldsQuota tells whether a pod still holds the compute quota it was
// charged (pods, requests.*, limits.*) at the time now: not once it has
// finished, nor once its deletion has run a grace period past its deletion
// timestamp (a pod stuck terminating on a lost node). A pod that is being
// deleted within its grace period still holds it, as in Kubernetes.
func PodHoldsQuota(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if end, ok := PodQuotaExpiry(pod); ok && now.After(end) {
		return false
	}
	return true
}

// PodQuotaExpiry is when a pod being deleted stops holding quota even if it
// is still stored: its deletion timestamp plus its grace period once more.
func PodQuotaExpiry(pod *corev1.Pod) (time.Time, bool) {
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second), true
}

// storageClassSuffix joins a class name and a claim resource in per-class
// quota names.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// StorageClassResource is Kubernetes' per-class claim quota name:
// <class>.storageclass.storage.k8s.io/<resource>, for requests.storage and
// persistentvolumeclaims.
func StorageClassResource(class string, name corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(class + storageClassSuffix + string(name))
}

// IsClaimResource tells whether a quota resource is one claims use:
// persistentvolumeclaims, requests.storage or a per-class one.
func IsClaimResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePersistentVolumeClaims, "count/persistentvolumeclaims", corev1.ResourceRequestsStorage:
		return true
	}
	_, res, ok := strings.Cut(string(name), storageClassSuffix)
	return ok && (res == string(corev1.ResourceRequestsStorage) || res == string(corev1.ResourcePersistentVolumeClaims))
}

// claimStorage is the storage a claim holds: its request, or what is
// already allocated to it when that is more (a shrink after a failed
// expansion still holds the larger size), rounded up to a whole byte, as
// Kubernetes counts it. A claim with no storage request holds none (ok is
// false), whatever its status says is allocated: Kubernetes weighs the
// allocated size only against a request.
func claimStorage(pvc *corev1.PersistentVolumeClaim) (q resource.Quantity, ok bool) {
	q, ok = pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	if a, found := pvc.Status.AllocatedResources[corev1.ResourceStorage]; found && a.Cmp(q) > 0 {
		q = a
	}
	q = q.DeepCopy()
	q.RoundUp(0)
	return q, true
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
