package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// runningStatus is what a kubelet writes for a started pod.
func runningStatus() corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: "example.com/gate", Status: corev1.ConditionTrue},
		},
		HostIP: "192.168.1.10", HostIPs: []corev1.HostIP{{IP: "192.168.1.10"}, {IP: "fd00::10"}},
		PodIP: "10.42.0.7", PodIPs: []corev1.PodIP{{IP: "10.42.0.7"}, {IP: "fd42::7"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}
}

func terminated(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	type statusCase struct {
		name       string
		policy     corev1.RestartPolicy
		old, new   func(*corev1.PodStatus)
		initAlways bool // the init container is a sidecar
		want       []want
	}
	cases := []statusCase{
		{name: "a kubelet's running status", new: func(*corev1.PodStatus) {}},
		{name: "condition type not a qualified name", new: func(s *corev1.PodStatus) { s.Conditions[2].Type = "not a name!" },
			want: []want{{"status.conditions[2].type", invalid}}},
		{name: "nominated node not a node name", new: func(s *corev1.PodStatus) { s.NominatedNodeName = "Node_1" },
			want: []want{{"status.nominatedNodeName", invalid}}},
		{name: "nominated node kept as stored", old: func(s *corev1.PodStatus) { s.NominatedNodeName = "Node_1" },
			new: func(s *corev1.PodStatus) { s.NominatedNodeName = "Node_1" }},
		{name: "pod IP not an address", new: func(s *corev1.PodStatus) { s.PodIPs[1].IP = "10.42.0.x" },
			want: []want{{"status.podIPs[1].ip", invalid}}},
		{name: "pod IP twice", new: func(s *corev1.PodStatus) { s.PodIPs[1].IP = "10.42.0.7" },
			want: []want{{"status.podIPs[1].ip", duplicate}}},
		{name: "two pod IPs of one family", new: func(s *corev1.PodStatus) { s.PodIPs[1].IP = "10.42.0.8" },
			want: []want{{"status.podIPs", invalid}}},
		{name: "host IP not an address", new: func(s *corev1.PodStatus) { s.HostIPs[0].IP = "" },
			want: []want{{"status.hostIPs[0].ip", invalid}}},
		{name: "two host IPv6 addresses", new: func(s *corev1.PodStatus) { s.HostIPs[0].IP = "fd00::11" },
			want: []want{{"status.hostIPs", invalid}}},
		{name: "finished container restarted under Never", policy: corev1.RestartPolicyNever,
			old:  func(s *corev1.PodStatus) { s.ContainerStatuses[0].State = terminated(0) },
			want: []want{{"status.containerStatuses[0].state", forbidden}}},
		{name: "finished container restarted under OnFailure", policy: corev1.RestartPolicyOnFailure,
			old:  func(s *corev1.PodStatus) { s.ContainerStatuses[0].State = terminated(0) },
			want: []want{{"status.containerStatuses[0].state", forbidden}}},
		{name: "failed container restarted under OnFailure", policy: corev1.RestartPolicyOnFailure,
			old: func(s *corev1.PodStatus) { s.ContainerStatuses[0].State = terminated(1) }},
		{name: "finished container restarted under Always", policy: corev1.RestartPolicyAlways,
			old: func(s *corev1.PodStatus) { s.ContainerStatuses[0].State = terminated(0) }},
		{name: "finished init container restarted under Never", policy: corev1.RestartPolicyNever,
			old: func(s *corev1.PodStatus) {
				s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminated(0)}}
			},
			new: func(s *corev1.PodStatus) {
				s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			},
			want: []want{{"status.initContainerStatuses[0].state", forbidden}}},
		{name: "finished ephemeral container restarted under Always", policy: corev1.RestartPolicyAlways,
			old: func(s *corev1.PodStatus) {
				s.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: terminated(0)}}
			},
			new: func(s *corev1.PodStatus) {
				s.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			},
			want: []want{{"status.ephemeralContainerStatuses[0].state", forbidden}}},
		{name: "ephemeral container still running", policy: corev1.RestartPolicyAlways,
			old: func(s *corev1.PodStatus) {
				s.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			},
			new: func(s *corev1.PodStatus) {
				s.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: terminated(1)}}
			}},
		{name: "sidecar restarted under Never", policy: corev1.RestartPolicyNever, initAlways: true,
			old: func(s *corev1.PodStatus) {
				s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminated(0)}}
			},
			new: func(s *corev1.PodStatus) {
				s.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := podWith(func(p *corev1.Pod) {
				p.Spec.RestartPolicy = tc.policy
				if tc.initAlways {
					p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				}
				p.Status = runningStatus()
				if tc.old != nil {
					tc.old(&p.Status)
				}
			})
			newPod := old.DeepCopy()
			newPod.Status = runningStatus()
			if tc.new != nil {
				tc.new(&newPod.Status)
			}
			expectErrors(t, ValidateStatusUpdate(newPod, old), tc.want)
		})
	}
}

// TestValidateStatusUpdateKeepsTheStoredSpec checks that a pod's status
// update does not judge its spec again (a pod stored before a rule
// tightened keeps its kubelet writing), while a kind whose rules read its
// status still runs them on a status update.
func TestValidateStatusUpdateKeepsTheStoredSpec(t *testing.T) {
	old := podWith(func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Not_A_Label" })
	if len(ValidateContentUpdate(old, old)) == 0 {
		t.Fatal("the stored pod's spec should break a rule")
	}
	newPod := old.DeepCopy()
	newPod.Status = runningStatus()
	newPod.Status.ContainerStatuses[0].Name = "Not_A_Label"
	expectErrors(t, ValidateStatusUpdate(newPod, old), nil)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	bad := node.DeepCopy()
	bad.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
	expectErrors(t, ValidateStatusUpdate(bad, node), []want{{"status.capacity[cpu]", invalid}})
}
