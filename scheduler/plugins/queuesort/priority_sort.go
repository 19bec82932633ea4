package queuesort

import (
	"time"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "PrioritySort"

// PrioritySort implements QueueSort.
type PrioritySort struct{}

// New builds the plugin.
func New(_ any, _ framework.Handle) (framework.Plugin, error) { return &PrioritySort{}, nil }

// Name implements framework.Plugin.
func (*PrioritySort) Name() string { return Name }

// Less puts the higher priority first (a pod without one counts as 0), then
// the pod queued earlier.
func (*PrioritySort) Less(pod1 *v1.Pod, queued1 time.Time, pod2 *v1.Pod, queued2 time.Time) bool {
	p1, p2 := corev1helpers.PodPriority(pod1), corev1helpers.PodPriority(pod2)
	return p1 > p2 || (p1 == p2 && queued1.Before(queued2))
}
