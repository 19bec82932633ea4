package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	t.Run("runtime", func(t *testing.T) { testFinishedPodsReleaseTheirIPs(t, fakeruntime.New(0, nil)) })
	t.Run("deferred runtime", func(t *testing.T) {
		testFinishedPodsReleaseTheirIPs(t, agent.NewDeferred("fake", func(context.Context, string) (agent.Runtime, error) {
			return fakeruntime.New(0, nil), nil
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

// stopRecorder is the hollow runtime, counting the pods whose sandboxes it
// was asked to stop, and those it was asked to kill.
type stopRecorder struct {
	*fakeruntime.Runtime
	mu      sync.Mutex
	stopped map[types.UID]int
	killed  map[types.UID]int
}

func (r *stopRecorder) KillPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	r.mu.Lock()
	r.killed[pod.UID]++
	r.mu.Unlock()
	return r.Runtime.KillPod(ctx, pod, grace)
}

func (r *stopRecorder) kills(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed[uid]
}

func (r *stopRecorder) StopSandbox(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	r.stopped[pod.UID]++
	r.mu.Unlock()
	return r.Runtime.StopSandbox(ctx, pod)
}

func (r *stopRecorder) stops(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped[uid]
}

// After an agent restart, pods that finished before it — completed, failed,
// evicted — hold no address: their sandboxes are stopped (whatever a
// previous agent left of them) and their addresses go to new pods, as at
// their finish. A running pod keeps its address even when a finished pod
// still reports it (it was given back at that pod's finish). A finished
// pod deleted later has its (stopped) containers removed.
func TestFinishedPodsHoldNoIPsAfterARestart(t *testing.T) {
	t.Run("runtime", func(t *testing.T) {
		rec := &stopRecorder{Runtime: fakeruntime.New(0, nil), stopped: map[types.UID]int{}, killed: map[types.UID]int{}}
		testFinishedPodsHoldNoIPsAfterARestart(t, rec, rec)
	})
	t.Run("deferred runtime", func(t *testing.T) {
		rec := &stopRecorder{Runtime: fakeruntime.New(0, nil), stopped: map[types.UID]int{}, killed: map[types.UID]int{}}
		testFinishedPodsHoldNoIPsAfterARestart(t, agent.NewDeferred("fake", func(context.Context, string) (agent.Runtime, error) {
			return rec, nil
		}), rec)
	})
}

func testFinishedPodsHoldNoIPsAfterARestart(t *testing.T, rt agent.Runtime, rec *stopRecorder) {
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	pod := func(name, ip string, phase corev1.PodPhase, reason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
			Status: corev1.PodStatus{Phase: phase, Reason: reason, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &started,
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox"}}}}
	}
	// A /29: the gateway and five pod addresses, .2 to .6. The running pod
	// took .2 after the pod "old" gave it back; the other four are held by
	// nothing but finished pods.
	finished := []*corev1.Pod{
		pod("old", "10.42.0.2", corev1.PodSucceeded, ""),
		pod("done", "10.42.0.3", corev1.PodSucceeded, ""),
		pod("failed", "10.42.0.4", corev1.PodFailed, ""),
		pod("evicted-1", "10.42.0.5", corev1.PodFailed, "Evicted"),
		pod("evicted-2", "10.42.0.6", corev1.PodFailed, "Evicted"),
	}
	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/29"}},
		pod("db", "10.42.0.2", corev1.PodRunning, "")}
	for _, p := range finished {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := agent.New(client, rt, agent.Config{NodeName: "n", RuntimeRetry: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, 2)

	ips := map[string]string{}
	for _, name := range []string{"web-0", "web-1", "web-2", "web-3"} {
		p := pod(name, "", "", "")
		p.Status = corev1.PodStatus{}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, name+" running with an address", func() (bool, error) {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				return false, nil
			}
			ips[name] = p.Status.PodIP
			return true, nil
		})
	}
	db, err := client.CoreV1().Pods("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, ip := range ips {
		if ip == db.Status.PodIP {
			t.Errorf("%s got %s, the running pod db's address", name, ip)
		}
	}
	if db.Status.PodIP != "10.42.0.2" {
		t.Errorf("db's address is %s, want the 10.42.0.2 it had", db.Status.PodIP)
	}
	for _, p := range finished {
		if n := rec.stops(p.UID); n != 1 {
			t.Errorf("%s: its sandbox was stopped %d times after the restart, want once", p.Name, n)
		}
	}
	// A completed pod goes at once (no grace): its containers go with it.
	if err := client.CoreV1().Pods("default").Delete(ctx, "done", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deleted finished pod's containers removed", func() (bool, error) { return rec.kills("uid-done") > 0, nil })
}
