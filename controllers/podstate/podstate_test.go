package podstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestIsAvailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := func(since time.Duration, st corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-since))}}}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		min  int32
		want bool
	}{
		{"ready without minReadySeconds", ready(0, corev1.ConditionTrue), 0, true},
		{"not ready", ready(time.Hour, corev1.ConditionFalse), 0, false},
		{"no ready condition", &corev1.Pod{}, 0, false},
		{"ready for less than minReadySeconds", ready(5*time.Second, corev1.ConditionTrue), 10, false},
		{"ready for exactly minReadySeconds", ready(10*time.Second, corev1.ConditionTrue), 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsAvailable(tc.pod, tc.min, now); got != tc.want {
				t.Errorf("IsAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResolvePort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", Ports: []corev1.ContainerPort{{Name: "setup", ContainerPort: 7000}}},
			{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001}, {Name: "http", ContainerPort: 15080}}},
		},
		Containers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
		},
	}}
	tests := []struct {
		name   string
		port   corev1.ServicePort
		want   int32
		wantOK bool
	}{
		{"a number is used as is", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, 9000, true},
		{"a name is looked up", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"the protocol must match", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("dns")}, 0, false},
		{"a UDP name matches a UDP port", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, 53, true},
		{"an unknown name does not resolve", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
		{"an unset target port is the service port", corev1.ServicePort{Port: 80}, 80, true},
		{"a name is looked up among sidecars' ports", corev1.ServicePort{Port: 15001, TargetPort: intstr.FromString("proxy")}, 15001, true},
		{"containers' ports come before sidecars'", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"ports of init containers that are not sidecars do not resolve", corev1.ServicePort{Port: 7000, TargetPort: intstr.FromString("setup")}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ResolvePort(pod, tc.port)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ResolvePort = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
