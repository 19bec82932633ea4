package defaulting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultUpdateKeepsServiceAllocations(t *testing.T) {
	old := &corev1.Service{Spec: corev1.ServiceSpec{
		Type:       corev1.ServiceTypeNodePort,
		ClusterIP:  "10.43.0.10",
		ClusterIPs: []string{"10.43.0.10"},
		Ports:      []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "https", Port: 443, NodePort: 30443}},
	}}
	Default(old)

	tests := []struct {
		name         string
		newSpec      corev1.ServiceSpec
		wantIP       string
		wantNodePort []int32
	}{
		{"replace without allocations keeps them",
			corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}},
			"10.43.0.10", []int32{30080, 30443}},
		{"explicit node port wins and is not reused",
			corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30443}, {Name: "https", Port: 443}}},
			"10.43.0.10", []int32{30443, 0}},
		{"switch to ClusterIP keeps the IP, drops node ports",
			corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			"10.43.0.10", []int32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Service{Spec: tc.newSpec}
			DefaultUpdate(n, old)
			if n.Spec.ClusterIP != tc.wantIP || len(n.Spec.ClusterIPs) != 1 || n.Spec.ClusterIPs[0] != tc.wantIP {
				t.Errorf("clusterIP/clusterIPs = %q/%v", n.Spec.ClusterIP, n.Spec.ClusterIPs)
			}
			for i, want := range tc.wantNodePort {
				if got := n.Spec.Ports[i].NodePort; got != want {
					t.Errorf("ports[%d].nodePort = %d, want %d", i, got, want)
				}
			}
			if n.Spec.Ports[0].TargetPort != intstr.FromInt32(n.Spec.Ports[0].Port) {
				t.Error("DefaultUpdate did not apply the ordinary defaults")
			}
		})
	}

	ext := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}}
	DefaultUpdate(ext, old)
	if ext.Spec.ClusterIP != "" || len(ext.Spec.ClusterIPs) != 0 {
		t.Errorf("ExternalName service inherited a cluster IP: %+v", ext.Spec)
	}
}
