package agent_test

import (
	"context"
	"net/netip"
	goruntime "runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

func poll(t *testing.T, what string, f func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) { return f() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestHollowNodesRegisterRunPodsAndStopThem(t *testing.T) {
	// The nodes exist with their pod CIDRs (the node IPAM controller's part)
	// before the agents start; registration keeps them. (The fake clientset
	// writes whole objects on status updates, so setting the CIDR while the
	// agents run would race with their heartbeats; the real API server keeps
	// spec and status apart.)
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow-0"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24", PodCIDRs: []string{"10.42.0.0/24"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.1.0/24", PodCIDRs: []string{"10.42.1.0/24"}}},
	)
	ctx, cancel := context.WithCancel(context.Background())
	var agents []*agent.Agent
	for _, name := range []string{"hollow-0", "hollow-1"} {
		a, err := agent.New(client, fakeruntime.New(50*time.Millisecond, nil), agent.Config{
			NodeName: name, Labels: map[string]string{"zone": "a"}, LeaseDuration: 400 * time.Millisecond,
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	done := make(chan error, 1)
	go func() { done <- agent.RunGroup(ctx, agents, 2) }()

	var n *corev1.Node
	poll(t, "node registration", func() (bool, error) {
		var err error
		n, err = client.CoreV1().Nodes().Get(ctx, "hollow-1", metav1.GetOptions{})
		return err == nil && len(n.Status.Conditions) > 0, nil
	})
	if n.Labels["zone"] != "a" || n.Labels[corev1.LabelHostname] != "hollow-1" ||
		n.Labels["beta.kubernetes.io/os"] != goruntime.GOOS || n.Labels["beta.kubernetes.io/arch"] != goruntime.GOARCH {
		t.Fatalf("labels %v", n.Labels)
	}
	var ready *corev1.NodeCondition
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &n.Status.Conditions[i]
		}
	}
	if ready == nil || ready.Status != corev1.ConditionTrue || n.Status.Allocatable.Pods().Value() != 110 {
		t.Fatalf("node status %+v", n.Status)
	}
	if h := n.Status.RuntimeHandlers; len(h) != 1 || h[0].Name != "" || h[0].Features == nil || !*h[0].Features.RecursiveReadOnlyMounts {
		t.Fatalf("runtime handlers %+v, want the default one with recursive read-only mounts", h)
	}
	poll(t, "node lease", func() (bool, error) {
		l, err := client.CoordinationV1().Leases(agent.NodeLeaseNamespace).Get(ctx, "hollow-1", metav1.GetOptions{})
		return err == nil && *l.Spec.HolderIdentity == "hollow-1", nil
	})
	grace := int64(30)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: "hollow-1", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25", VolumeMounts: []corev1.VolumeMount{
				{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	poll(t, "pod running", func() (bool, error) {
		var err error
		got, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, nil
	})
	ip, err := netip.ParseAddr(got.Status.PodIP)
	if err != nil || !netip.MustParsePrefix("10.42.1.0/24").Contains(ip) || ip == netip.MustParseAddr("10.42.1.1") {
		t.Fatalf("pod IP %q is not a pod address of hollow-1's CIDR", got.Status.PodIP)
	}
	if got.Status.HostIP != "192.0.2.10" || len(got.Status.ContainerStatuses) != 1 || !got.Status.ContainerStatuses[0].Ready ||
		got.Status.InitContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("status %+v", got.Status)
	}
	if m := got.Status.ContainerStatuses[0].VolumeMounts; len(m) != 1 || m[0].RecursiveReadOnly == nil || *m[0].RecursiveReadOnly != corev1.RecursiveReadOnlyEnabled {
		t.Fatalf("volume mounts %+v, want the one Enabled", m)
	}
	for _, c := range got.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.PodInitialized || c.Type == corev1.ContainersReady) && c.Status != corev1.ConditionTrue {
			t.Fatalf("condition %s is %s", c.Type, c.Status)
		}
	}
	// Graceful deletion: the API server sets deletionTimestamp; the agent
	// stops the containers and then removes the pod.
	now := metav1.Now()
	got.DeletionTimestamp, got.DeletionGracePeriodSeconds = &now, &grace
	if _, err := client.CoreV1().Pods("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "pod removal", func() (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Before the pod went, its terminal status was written, as the kubelet
	// does: the hollow container, stopped, ended as a process without a
	// SIGTERM handler (143), so the pod Failed.
	var final *corev1.Pod
	finalAt, deletedAt := -1, -1
	for i, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			if p := u.GetObject().(*corev1.Pod); p.Status.Phase == corev1.PodFailed {
				final, finalAt = p, i
			}
		}
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deletedAt = i
		}
	}
	if final == nil || finalAt > deletedAt {
		t.Fatalf("no Failed status written before the pod's removal (status at %d, delete at %d)", finalAt, deletedAt)
	}
	if c := final.Status.ContainerStatuses; len(c) != 1 || c[0].State.Terminated == nil || c[0].State.Terminated.ExitCode != 143 || c[0].Ready {
		t.Errorf("final container statuses %+v, want app terminated with 143", c)
	}
	// Shutdown cordons the nodes.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n, _ = client.CoreV1().Nodes().Get(context.Background(), "hollow-0", metav1.GetOptions{})
	if !n.Spec.Unschedulable {
		t.Fatal("node not cordoned at shutdown")
	}
	// A restart lifts the agent's own cordon but not an administrator's.
	admin, _ := client.CoreV1().Nodes().Get(context.Background(), "hollow-1", metav1.GetOptions{})
	delete(admin.Annotations, "skiff.io/cordoned-at-shutdown")
	client.CoreV1().Nodes().Update(context.Background(), admin, metav1.UpdateOptions{})
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var again []*agent.Agent
	for _, name := range []string{"hollow-0", "hollow-1"} {
		a, _ := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: name})
		again = append(again, a)
	}
	go agent.RunGroup(ctx2, again, 1)
	poll(t, "hollow-0 uncordoned after restart", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx2, "hollow-0", metav1.GetOptions{})
		return err == nil && !n.Spec.Unschedulable, nil
	})
	if n, _ := client.CoreV1().Nodes().Get(ctx2, "hollow-1", metav1.GetOptions{}); !n.Spec.Unschedulable {
		t.Fatal("the agent lifted an administrator's cordon")
	}
}
