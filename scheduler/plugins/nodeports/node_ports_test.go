package nodeports

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestNodePortsFilter(t *testing.T) {
	const tcp, udp = v1.ProtocolTCP, v1.ProtocolUDP
	existing := func(proto v1.Protocol, ip string, port int32) *v1.Pod {
		return schedtest.MakePod().Name("existing").HostPort(proto, ip, port).Obj()
	}
	// initPort moves the pod's host port into an init container; sidecar
	// makes that init container restartable (it runs for the pod's lifetime).
	initPort := func(p *v1.Pod, sidecar bool) *v1.Pod {
		c := p.Spec.Containers[0]
		c.Name = "init"
		if sidecar {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		p.Spec.Containers[0].Ports = nil
		return p
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing *v1.Pod
		want     string
	}{
		{"a pod without host ports always fits", schedtest.MakePod().Obj(), existing(tcp, "", 80), ""},
		{"a free port fits", schedtest.MakePod().HostPort(tcp, "", 8080).Obj(), existing(tcp, "", 80), ""},
		{"the same port on all addresses conflicts", schedtest.MakePod().HostPort(tcp, "", 80).Obj(), existing(tcp, "", 80),
			"Unschedulable: " + ErrReason},
		{"the same port over another protocol fits", schedtest.MakePod().HostPort(udp, "", 80).Obj(), existing(tcp, "", 80), ""},
		{"the same port on two specific addresses fits", schedtest.MakePod().HostPort(tcp, "10.0.0.1", 80).Obj(), existing(tcp, "10.0.0.2", 80), ""},
		{"a specific address conflicts with a wildcard holder", schedtest.MakePod().HostPort(tcp, "10.0.0.1", 80).Obj(), existing(tcp, "0.0.0.0", 80),
			"Unschedulable: " + ErrReason},
		{"a wildcard conflicts with a specific holder", schedtest.MakePod().HostPort(tcp, "", 80).Obj(), existing(tcp, "10.0.0.2", 80),
			"Unschedulable: " + ErrReason},
		// Only sidecars hold their ports while the pod runs, as kube-scheduler counts them.
		{"a placed pod's finished init container holds no port", schedtest.MakePod().HostPort(tcp, "", 80).Obj(), initPort(existing(tcp, "", 80), false), ""},
		{"a placed pod's sidecar holds its port", schedtest.MakePod().HostPort(tcp, "", 80).Obj(), initPort(existing(tcp, "", 80), true),
			"Unschedulable: " + ErrReason},
		{"a plain init container's port is not wanted", initPort(schedtest.MakePod().HostPort(tcp, "", 80).Obj(), false), existing(tcp, "", 80), ""},
		{"a sidecar's port is wanted", initPort(schedtest.MakePod().HostPort(tcp, "", 80).Obj(), true), existing(tcp, "", 80),
			"Unschedulable: " + ErrReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			ni := schedtest.NodeInfo(schedtest.MakeNode().Obj(), tc.existing)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, ni)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
