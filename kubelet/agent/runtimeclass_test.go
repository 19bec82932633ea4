package agent_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// A pod naming a RuntimeClass (the API server refuses to create one, but
// it may have been stored before it did) does not start: skiff has no
// RuntimeClasses, so its handler cannot be looked up, and as the v1.33
// kubelet fails such a pod's sandbox config (LookupRuntimeHandler) it
// stays Pending with no sandbox, no IP, its container waiting in
// ContainerCreating, and a Warning FailedCreatePodSandBox Event with the
// lister's NotFound, once per back-off. It ran with the default handler,
// less isolated than asked. The empty name is the default class and runs.
func TestPodNamingARuntimeClassDoesNotStart(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, rec := runHollowAgent(t, client)
	sandboxed := usernsPod("sandboxed", nil)
	sandboxed.Spec.RuntimeClassName = ptr.To("gvisor")
	defaultClass := usernsPod("default-class", nil)
	defaultClass.Spec.RuntimeClassName = ptr.To("")
	get := createPods(ctx, t, client, sandboxed, defaultClass)
	poll(t, "default-class running", func() (bool, error) { return get("default-class").Status.Phase == corev1.PodRunning, nil })
	poll(t, "sandboxed's status written", func() (bool, error) { return len(get("sandboxed").Status.ContainerStatuses) > 0, nil })
	st := get("sandboxed").Status
	if st.Phase != corev1.PodPending || st.PodIP != "" || len(st.PodIPs) != 0 {
		t.Errorf("phase %q podIP %q, want Pending without an IP", st.Phase, st.PodIP)
	}
	if cs := st.ContainerStatuses[0]; cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" || cs.ContainerID != "" {
		t.Errorf("container %+v, want waiting in ContainerCreating", cs)
	}
	// The Event follows the status write; its own status writes come
	// back through the watch, and nothing is recorded again before the
	// back-off ends.
	count := map[string]int{}
	drain := func() {
		for len(rec.Events) > 0 {
			count[<-rec.Events]++
		}
	}
	want := `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found`
	poll(t, "the FailedCreatePodSandBox Event", func() (bool, error) { drain(); return count[want] > 0, nil })
	time.Sleep(300 * time.Millisecond)
	drain()
	if count[want] != 1 {
		t.Errorf("%q recorded %d times, want once (all: %v)", want, count[want], count)
	}
	if n := count["Normal Started Started container app"]; n != 1 {
		t.Errorf("%d containers started, want default-class's alone (all: %v)", n, count)
	}
}
