package framework

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Defaults used for scoring pods that request no CPU or memory, so that a node
// full of request-less pods does not look empty to the spreading scores
// (the values kube-scheduler uses).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
}

// Resource is a flat, additive view of a resource list: the scheduler adds and
// compares these for every node of every attempt, so plain integers beat
// resource.Quantity arithmetic.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is only meaningful for allocatable: the node's pod capacity.
	AllowedPodNumber int
	// Scalar holds extended resources (example.com/gpu), hugepages and the like.
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a resource list.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds every quantity of rl.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if IsScalarResource(name) {
				r.SetScalar(name, r.Scalar[name]+q.Value())
			}
		}
	}
}

// AddResource adds o to r.
func (r *Resource) AddResource(o *Resource) { r.addSigned(o, 1) }

// SubResource subtracts o from r.
func (r *Resource) SubResource(o *Resource) { r.addSigned(o, -1) }

func (r *Resource) addSigned(o *Resource, sign int64) {
	if o == nil {
		return
	}
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += int(sign) * o.AllowedPodNumber
	for k, v := range o.Scalar {
		r.SetScalar(k, r.Scalar[k]+sign*v)
	}
}

// SetScalar sets one extended resource.
func (r *Resource) SetScalar(name v1.ResourceName, v int64) {
	if r.Scalar == nil {
		r.Scalar = map[v1.ResourceName]int64{}
	}
	r.Scalar[name] = v
}

// Clone returns a deep copy.
func (r *Resource) Clone() *Resource {
	out := *r
	if r.Scalar != nil {
		out.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			out.Scalar[k] = v
		}
	}
	return &out
}

// Get returns the amount of one named resource (CPU in millicores).
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return int64(r.AllowedPodNumber)
	default:
		return r.Scalar[name]
	}
}

// IsScalarResource reports whether name is tracked in Resource.Scalar:
// extended resources (a domain-qualified name outside kubernetes.io), hugepages
// and attachable volumes.
func IsScalarResource(name v1.ResourceName) bool {
	s := string(name)
	if len(s) > len(v1.ResourceHugePagesPrefix) && s[:len(v1.ResourceHugePagesPrefix)] == v1.ResourceHugePagesPrefix {
		return true
	}
	return IsExtendedResource(name)
}

// IsExtendedResource reports a domain-qualified resource outside the
// kubernetes.io domain (and not a requests.* quota name).
func IsExtendedResource(name v1.ResourceName) bool {
	s := string(name)
	slash := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			slash = i
			break
		}
	}
	if slash <= 0 {
		return false
	}
	domain := s[:slash]
	if domain == "kubernetes.io" || hasSuffix(domain, ".kubernetes.io") || hasPrefix(s, "requests.") {
		return false
	}
	return true
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }
func hasPrefix(s, pre string) bool { return len(s) >= len(pre) && s[:len(pre)] == pre }

// PodRequests is what a pod asks of a node: the larger of the sum of its
// containers and the biggest init container (restartable sidecars counted as
// Kubernetes does), plus pod overhead — computed by component-helpers, the
// same code kube-scheduler and the kubelet use.
func PodRequests(pod *v1.Pod) *Resource {
	return NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
}

// PodNonZeroRequests is PodRequests with the scoring defaults filled in for
// containers that leave CPU or memory unset.
func PodNonZeroRequests(pod *v1.Pod) *Resource {
	return NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults}))
}
