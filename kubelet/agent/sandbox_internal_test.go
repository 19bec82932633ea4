package agent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// As the v1.33 kubelet's NamespacesForPod, for a cluster with no
// RuntimeClasses: a pod naming one is refused first, with the lister's
// NotFound (LookupRuntimeHandler); then, against the default handler ("",
// the only one a pod can have), GetOrCreateUserNamespaceMappings with its
// HandlerSupportsUserNamespaces: a pod asking for hostUsers false needs the
// handler to support user namespaces, and the error says why not in the
// kubelet's words; hostUsers true or unset needs nothing.
func TestSandboxConfigRefusal(t *testing.T) {
	handler := func(name string, userns *bool) []corev1.NodeRuntimeHandler {
		return []corev1.NodeRuntimeHandler{{Name: name, Features: &corev1.NodeRuntimeHandlerFeatures{UserNamespaces: userns}}}
	}
	const refused = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	const noGvisor = `runtimeclass.node.k8s.io "gvisor" not found`
	cases := []struct {
		name         string
		runtimeClass *string
		hostUsers    *bool
		handlers     []corev1.NodeRuntimeHandler
		want         string
	}{
		{"hostUsers unset", nil, nil, nil, ""},
		{"hostUsers true", nil, ptr.To(true), nil, ""},
		{"hostUsers false, default handler without user namespaces", nil, ptr.To(false), DefaultRuntimeHandlers(true), refused},
		{"hostUsers false, default handler not saying", nil, ptr.To(false), handler("", nil), refused},
		{"hostUsers false, default handler with features unknown", nil, ptr.To(false), []corev1.NodeRuntimeHandler{{Name: ""}}, refused},
		{"hostUsers false, default handler with user namespaces", nil, ptr.To(false), handler("", ptr.To(true)), ""},
		{"hostUsers false, no handlers reported", nil, ptr.To(false), nil, refused + ": runtime handlers are not set"},
		{"hostUsers false, only another handler", nil, ptr.To(false), handler("kata", ptr.To(true)), refused + `: the handler "" is not known`},
		{"a RuntimeClass", ptr.To("gvisor"), nil, DefaultRuntimeHandlers(true), noGvisor},
		{"a RuntimeClass, no handlers reported", ptr.To("gvisor"), nil, nil, noGvisor},
		// Its handler would be the runtime's own name for it.
		{"a RuntimeClass named as a handler the runtime has", ptr.To("gvisor"), nil, handler("gvisor", ptr.To(true)), noGvisor},
		{"a RuntimeClass is looked up before user namespaces", ptr.To("gvisor"), ptr.To(false), DefaultRuntimeHandlers(true), noGvisor},
		{"the empty RuntimeClass is the default", ptr.To(""), nil, DefaultRuntimeHandlers(true), ""},
		{"the empty RuntimeClass and hostUsers false", ptr.To(""), ptr.To(false), DefaultRuntimeHandlers(true), refused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RuntimeClassName: tc.runtimeClass, HostUsers: tc.hostUsers}}
			got := ""
			if err := sandboxConfigRefusal(pod, tc.handlers); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("refusal %q, want %q", got, tc.want)
			}
		})
	}
}

// The sandbox of a refused pod is tried again after the kubelet's pod
// worker back-off (10s, up to half again with jitter), not at every sync.
func TestSandboxBackOff(t *testing.T) {
	b := sandboxBackOff{}
	now := time.Now()
	if wait, try := b.attempt("p", now); !try || wait < sandboxRetryPeriod || wait > sandboxRetryPeriod*3/2 {
		t.Fatalf("first: try %v, wait %s; want a try, then 10-15s", try, wait)
	}
	if wait, try := b.attempt("p", now.Add(9*time.Second)); try || wait <= 0 || wait > 6*time.Second {
		t.Errorf("after 9s: try %v, wait %s; want no try, the rest of the back-off", try, wait)
	}
	if _, try := b.attempt("q", now.Add(9*time.Second)); !try {
		t.Errorf("another pod waits for this one's back-off")
	}
	if _, try := b.attempt("p", now.Add(16*time.Second)); !try {
		t.Errorf("after 16s: no try")
	}
	b.forget("p")
	if _, try := b.attempt("p", now.Add(17*time.Second)); !try {
		t.Errorf("a forgotten pod waits")
	}
}

// killRecorder is a runtime without user namespaces that records the pods
// it is told to kill; it fails the test if asked to run one.
type killRecorder struct {
	handlersRuntime
	t      *testing.T
	mu     sync.Mutex
	killed []types.UID
}

func (r *killRecorder) SyncPod(_ context.Context, pod *corev1.Pod, _ string) (PodState, error) {
	r.t.Errorf("pod %s run", pod.Name)
	return PodState{}, errors.New("not here")
}

func (r *killRecorder) KillPod(_ context.Context, pod *corev1.Pod, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killed = append(r.killed, pod.UID)
	return nil
}

func (r *killRecorder) kills() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.killed)
}

// A pod refused its sandbox that an agent before this one ran anyway —
// asking for a user namespace (run in the host's), or naming a
// RuntimeClass (run with the default handler) — is stopped, with the
// Killing Events of its running containers, and then reported as a pod
// without a sandbox whose container the kubelet can no longer locate: it
// waits to restart (restartPolicy Always), the kill its last state (137,
// ContainerStatusUnknown) and one restart more, the pod Running as
// getPhase counts a container waiting after an exit. Nothing of it keeps
// running while its status says it waits.
func TestRefusedPodThatRanIsStopped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ask   func(*corev1.PodSpec)
		event string
	}{
		{"user namespace", func(s *corev1.PodSpec) { s.HostUsers = ptr.To(false) },
			"can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"RuntimeClass", func(s *corev1.PodSpec) { s.RuntimeClassName = ptr.To("gvisor") },
			`runtimeclass.node.k8s.io "gvisor" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) { testRefusedPodThatRanIsStopped(t, tc.ask, tc.event) })
	}
}

func testRefusedPodThatRanIsStopped(t *testing.T, ask func(*corev1.PodSpec), refusal string) {
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ran", Namespace: "default", UID: "uid-ran"},
		Spec: corev1.PodSpec{NodeName: "n", TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.42.0.9", StartTime: &started,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "busybox", ContainerID: "containerd://c1", RestartCount: 2, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}},
	}
	ask(&pod.Spec)
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}}, pod)
	rt, rec, ctx := runRefusingAgent(t, client)
	got, err := waitRanStopped(ctx, client, 10*time.Second)
	if err != nil {
		t.Fatalf("waiting for the container to be reported stopped: %v (status %+v)", err, got.Status)
	}
	if k := rt.kills(); len(k) != 1 || k[0] != "uid-ran" {
		t.Errorf("pods killed %v, want uid-ran once", k)
	}
	cs := got.Status.ContainerStatuses
	if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "" || len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" ||
		cs[0].RestartCount != 3 || cs[0].Ready || cs[0].LastTerminationState.Terminated == nil ||
		cs[0].LastTerminationState.Terminated.ExitCode != 137 || cs[0].LastTerminationState.Terminated.Reason != "ContainerStatusUnknown" {
		t.Errorf("status %+v, want Running, no IP and app waiting in ContainerCreating, restarted once more, the kill (137 ContainerStatusUnknown) as last state", got.Status)
	}
	// The Event follows the status write.
	var events []string
	wants := []string{"Normal Killing Stopping container app", "Warning FailedCreatePodSandBox Failed to create pod sandbox: " + refusal}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for len(rec.Events) > 0 {
			events = append(events, <-rec.Events)
		}
		return slices.Contains(events, wants[0]) && slices.Contains(events, wants[1]), nil
	})
	if err != nil {
		t.Errorf("Events %q, want %q", events, wants)
	}
}

// waitRanStopped waits up to timeout for the pod "ran" to report its first
// container no longer running, and returns the pod as last read.
func waitRanStopped(ctx context.Context, client *fake.Clientset, timeout time.Duration) (*corev1.Pod, error) {
	got := &corev1.Pod{}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "ran", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = p
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running == nil, nil
	})
	return got, err
}
