package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// A runtime that cannot open yet (containerd's socket missing) leaves the
// node NotReady with that reason; once it opens the node turns Ready at
// once (not at the next heartbeat) and pods that waited run.
func TestDeferredRuntimeReportsWhyAndOpensLater(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-0"},
		Spec: corev1.NodeSpec{PodCIDR: "10.42.3.0/24", PodCIDRs: []string{"10.42.3.0/24"}}})
	var socketThere atomic.Bool
	var gotCIDR atomic.Value
	rt := agent.NewDeferred("containerd", func(_ context.Context, cidr string) (agent.Runtime, error) {
		gotCIDR.Store(cidr)
		if !socketThere.Load() {
			return nil, errors.New("containerd socket /nonexistent.sock not found")
		}
		return fakeruntime.New(0, nil), nil
	})
	a, err := agent.New(client, rt, agent.Config{NodeName: "real-0", DaemonPort: 10250, RuntimeRetry: 50 * time.Millisecond,
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.11"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 1)

	poll(t, "NotReady with the socket's reason", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "real-0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := readyCondition(n)
		return c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "containerd socket /nonexistent.sock not found"), nil
	})
	if gotCIDR.Load() != "10.42.3.0/24" {
		t.Errorf("opener got pod CIDR %v", gotCIDR.Load())
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "waits", Namespace: "default", UID: "uid-waits"},
		Spec: corev1.PodSpec{NodeName: "real-0", Containers: []corev1.Container{{Name: "app", Image: "x", VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if p, _ := client.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{}); p.Status.Phase == corev1.PodRunning {
		t.Fatal("pod ran before the runtime opened")
	}
	socketThere.Store(true)
	poll(t, "Ready after the runtime opened", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "real-0", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := readyCondition(n)
		return c != nil && c.Status == corev1.ConditionTrue && n.Status.NodeInfo.ContainerRuntimeVersion == "containerd://1.0.0" &&
			n.Status.DaemonEndpoints.KubeletEndpoint.Port == 10250 && len(n.Status.RuntimeHandlers) == 1, nil
	})
	var running *corev1.Pod
	poll(t, "waiting pod running", func() (bool, error) {
		var err error
		running, err = client.CoreV1().Pods("default").Get(ctx, "waits", metav1.GetOptions{})
		return err == nil && running.Status.Phase == corev1.PodRunning, nil
	})
	// The opened runtime's handler supports recursive read-only mounts:
	// the pod's mount, resolved against it, reports Enabled.
	if m := running.Status.ContainerStatuses[0].VolumeMounts; len(m) != 1 || *m[0].RecursiveReadOnly != corev1.RecursiveReadOnlyEnabled {
		t.Errorf("volume mounts %+v, want the one Enabled", m)
	}
}
