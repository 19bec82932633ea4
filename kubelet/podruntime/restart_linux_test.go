//go:build linux

package podruntime

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/kubelet/agent"
)

// runAgent runs a node agent over a fresh pod runtime on e's containerd and
// pod network, behind a DeferredRuntime as a real node's; stopping it
// (the returned function) leaves the containers, as an agent restart does.
func runAgent(t *testing.T, e *env, client *fake.Clientset, node string) (*agent.Agent, func()) {
	t.Helper()
	rt, err := New(Config{Containers: e.ctr, Network: e.nets, PodDir: e.pods, LogDir: e.logs, Objects: e.objs})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(client, agent.NewDeferred("containerd", func(context.Context, string) (agent.Runtime, error) { return rt, nil }),
		agent.Config{NodeName: node, RuntimeRetry: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.Run(ctx, 2); err != nil {
			t.Errorf("agent: %v", err)
		}
	}()
	return a, func() {
		cancel()
		<-done
		rt.Stop()
	}
}

// runningWithIP waits for the pod to run with an address and returns it.
func runningWithIP(t *testing.T, client *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitLong, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			return false, nil
		}
		pod = p
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to run with an address: %v", name, err)
	}
	return pod
}

// An evicted pod's address stays free across an agent restart on the real
// runtime: the node's pod CIDR has room for one pod, and after the first
// pod's eviction and a restart, the next pod runs (on that address).
func TestEvictedPodsAddressIsFreeAfterAnAgentRestart(t *testing.T) {
	e := newEnv(t, "sktevict0", "10.251.63.0/30")
	const node = "node-test"
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: corev1.NodeSpec{PodCIDR: "10.251.63.0/30"}})
	ctx := context.Background()
	create := func(name string) *corev1.Pod {
		pod := newTestPod(name)
		pod.Spec.Containers = []corev1.Container{appContainer("app", "sleep")}
		t.Cleanup(func() { e.rt.KillPod(context.Background(), pod, 0) })
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return pod
	}

	a, stop := runAgent(t, e, client, node)
	first := runningWithIP(t, client, create("first").Name)
	if err := a.EvictPod(ctx, first, "The node was low on resource: memory. "); err != nil {
		t.Fatal(err)
	}
	stop()

	_, stop = runAgent(t, e, client, node)
	defer stop()
	second := runningWithIP(t, client, create("second").Name)
	if second.Status.PodIP != first.Status.PodIP {
		t.Errorf("second pod runs on %s, want the evicted pod's %s (the only one)", second.Status.PodIP, first.Status.PodIP)
	}
	if got, err := client.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{}); err != nil || got.Status.Reason != "Evicted" {
		t.Fatalf("first pod: %v, %+v; want it kept, evicted", err, got.Status)
	}
}
