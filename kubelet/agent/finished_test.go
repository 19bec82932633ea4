package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// A pod that completed gives its IP back, as the kubelet stops a finished
// pod's sandbox: a node whose pod CIDR has room for five pods runs a sixth
// after five completed (Job pods stay until their Job goes), and the
// completed ones report PodReadyToStartContainers False.
// The real runtime is reached through a DeferredRuntime (opened once the
// node has its pod CIDR): its finished pods give their IPs back too.
func TestFinishedPodsReleaseTheirIPs(t *testing.T) {
	t.Run("runtime", func(t *testing.T) { testFinishedPodsReleaseTheirIPs(t, fakeruntime.New(0)) })
	t.Run("deferred runtime", func(t *testing.T) {
		testFinishedPodsReleaseTheirIPs(t, agent.NewDeferred("fake", func(context.Context, string) (agent.Runtime, error) {
			return fakeruntime.New(0), nil
		}))
	})
}

func testFinishedPodsReleaseTheirIPs(t *testing.T, rt agent.Runtime) {
	// A /29: the gateway and five pod addresses.
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/29"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := agent.New(client, rt, agent.Config{NodeName: "n", RuntimeRetry: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, 2)
	newPod := func(name string, exits bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
		if exits {
			p.Annotations = map[string]string{fakeruntime.ExitAfterAnnotation: "0s"}
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 6 {
		name := fmt.Sprintf("job-%d", i)
		newPod(name, true)
		var got *corev1.Pod
		poll(t, name+" succeeded", func() (bool, error) {
			var err error
			got, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodSucceeded, nil
		})
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status != corev1.ConditionFalse {
				t.Fatalf("%s: PodReadyToStartContainers %s, want False once finished", name, c.Status)
			}
		}
	}
	newPod("web", false)
	poll(t, "a pod running after six completed", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", nil
	})
}
