package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// usernsPod is a pod on node n asking for hostUsers as given.
func usernsPod(name string, hostUsers *bool, inits ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyAlways, HostUsers: hostUsers,
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	for _, c := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c, Image: "busybox"})
	}
	return p
}

const msgNoUserns = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"

// A pod asking for a user namespace of its own (hostUsers: false) on a
// runtime whose default handler has none — the hollow one, like the
// real one — does not start: as the v1.33 kubelet fails to generate its
// sandbox's config, it stays Pending with no sandbox (no IP,
// PodReadyToStartContainers False), its containers waiting in
// ContainerCreating (PodInitializing, init and app, when it has init
// containers), and a Warning FailedCreatePodSandBox Event says why. It is
// tried again only after a back-off (about 10s), so its own status write
// does not record the Event again. Pods in the host's user namespace
// (hostUsers true or unset) run as before.
func TestPodAskingForAUserNamespaceDoesNotStart(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, rec := runHollowAgent(t, client)
	pods := []*corev1.Pod{
		usernsPod("userns", ptr.To(false)),
		usernsPod("userns-init", ptr.To(false), "setup"),
		usernsPod("host-users", ptr.To(true)),
		usernsPod("default-users", nil),
	}
	get := createPods(ctx, t, client, pods...)
	for _, name := range []string{"host-users", "default-users"} {
		poll(t, name+" running", func() (bool, error) { return get(name).Status.Phase == corev1.PodRunning, nil })
	}
	for _, tc := range []struct {
		name, reason string
	}{{"userns", "ContainerCreating"}, {"userns-init", "PodInitializing"}} {
		poll(t, tc.name+"'s status written", func() (bool, error) { return len(get(tc.name).Status.ContainerStatuses) > 0, nil })
		st := get(tc.name).Status
		if st.Phase != corev1.PodPending || st.PodIP != "" || len(st.PodIPs) != 0 || st.StartTime == nil {
			t.Errorf("%s: phase %q podIP %q startTime %v, want Pending without an IP, started", tc.name, st.Phase, st.PodIP, st.StartTime)
		}
		for _, cs := range append(slices.Clone(st.InitContainerStatuses), st.ContainerStatuses...) {
			if w := cs.State.Waiting; w == nil || w.Reason != tc.reason || cs.Ready || cs.ContainerID != "" {
				t.Errorf("%s: container %s %+v, want waiting in %s", tc.name, cs.Name, cs, tc.reason)
			}
		}
		for _, c := range st.Conditions {
			switch c.Type {
			case corev1.PodReadyToStartContainers, corev1.PodReady, corev1.ContainersReady:
				if c.Status != corev1.ConditionFalse {
					t.Errorf("%s: %s %s, want False", tc.name, c.Type, c.Status)
				}
			}
		}
	}
	// Its own status writes come back through the watch: nothing is
	// recorded again before the back-off ends.
	time.Sleep(300 * time.Millisecond)
	count := map[string]int{}
	for len(rec.Events) > 0 {
		count[<-rec.Events]++
	}
	want := "Warning FailedCreatePodSandBox Failed to create pod sandbox: " + msgNoUserns
	if count[want] != 2 {
		t.Errorf("%q recorded %d times, want once per pod (all: %v)", want, count[want], count)
	}
	if n := count["Normal Started Started container app"]; n != 2 {
		t.Errorf("%d containers started, want the two in the host's user namespace (all: %v)", n, count)
	}
	if st := get("userns").Status; st.Phase != corev1.PodPending || st.ContainerStatuses[0].State.Waiting == nil {
		t.Errorf("userns later: %+v, want still waiting", st)
	}
}

// A pod asking for a user namespace can be deleted as any pod that never
// started.
func TestPodAskingForAUserNamespaceIsDeleted(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, _ := runHollowAgent(t, client)
	if _, err := client.CoreV1().Pods("default").Create(ctx, usernsPod("userns", ptr.To(false)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "its status written", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "userns", metav1.GetOptions{})
		return err == nil && len(p.Status.ContainerStatuses) > 0, nil
	})
	p, _ := client.CoreV1().Pods("default").Get(ctx, "userns", metav1.GetOptions{})
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, ptr.To[int64](0)
	if _, err := client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod removed", func() (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "userns", metav1.GetOptions{})
		return err != nil, nil
	})
}

// Its active deadline counts from when the agent took it, as for any pod:
// it is failed on time, not at the end of the sandbox back-off.
func TestPodAskingForAUserNamespacePastItsDeadlineFails(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, _ := runHollowAgent(t, client)
	pod := usernsPod("userns", ptr.To(false))
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	created := time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod failed past its deadline", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "userns", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded", nil
	})
	if d := time.Since(created); d > 5*time.Second {
		t.Errorf("failed %s after its creation, its deadline is 1s", d)
	}
}

// createPods creates pods in "default" and returns how to read one back.
func createPods(ctx context.Context, t *testing.T, client *fake.Clientset, pods ...*corev1.Pod) (get func(name string) *corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return func(name string) *corev1.Pod {
		t.Helper()
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// runHollowAgent runs, until the test ends, an agent for node n over client
// on the hollow runtime, both recording Events in the returned recorder;
// ctx ends with the test.
func runHollowAgent(t *testing.T, client *fake.Clientset) (context.Context, *record.FakeRecorder) {
	t.Helper()
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, rec), agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx, 1)
	return ctx, rec
}
