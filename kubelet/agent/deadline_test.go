package agent_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// A pod running longer than its spec.activeDeadlineSeconds, counted from
// its start time, is stopped and failed as the kubelet's active deadline
// handler fails it: phase Failed, reason DeadlineExceeded, the kubelet's
// message and Event, its containers ended (the hollow ones as processes
// without a SIGTERM handler: 143) and no longer ready, each stop with its
// Killing Event.
// deadlineNode is the node n the deadline tests' agent runs.
func deadlineNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}}
}

// boundedPod is a pod on node n allowed one second of activity.
func boundedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bounded", Namespace: "default", UID: "uid-bounded"},
		Spec: corev1.PodSpec{NodeName: "n", RestartPolicy: corev1.RestartPolicyAlways, ActiveDeadlineSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func TestPodPastItsActiveDeadlineFails(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, rec), agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, 1)
	pod := boundedPod()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	poll(t, "the pod running", func() (bool, error) {
		got, err = client.CoreV1().Pods("default").Get(ctx, "bounded", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, nil
	})
	poll(t, "the pod failed past its deadline", func() (bool, error) {
		got, err = client.CoreV1().Pods("default").Get(ctx, "bounded", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, nil
	})
	if got.Status.Reason != "DeadlineExceeded" || got.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q message %q", got.Status.Reason, got.Status.Message)
	}
	if since := time.Since(got.Status.StartTime.Time); since < time.Second {
		t.Errorf("failed %s after its start, before its deadline", since)
	}
	if c := got.Status.ContainerStatuses; len(c) != 1 || c[0].State.Terminated == nil || c[0].State.Terminated.ExitCode != 143 || c[0].Ready {
		t.Errorf("container statuses %+v, want app terminated with 143", c)
	}
	for _, c := range got.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && (c.Status != corev1.ConditionFalse || c.Reason != "PodFailed") {
			t.Errorf("%s: %s %s, want False PodFailed", c.Type, c.Status, c.Reason)
		}
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	for _, want := range []string{"Normal DeadlineExceeded Pod was active on the node longer than the specified deadline", "Normal Killing Stopping container app"} {
		if !slices.Contains(events, want) {
			t.Errorf("Events %q, want %q", events, want)
		}
	}
	// It stays failed: nothing starts its containers again.
	time.Sleep(200 * time.Millisecond)
	if got, _ = client.CoreV1().Pods("default").Get(ctx, "bounded", metav1.GetOptions{}); got.Status.Phase != corev1.PodFailed ||
		got.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("after failing: %+v", got.Status)
	}
}

// failingSandbox is the hollow runtime whose first sandbox stops fail.
type failingSandbox struct {
	*fakeruntime.Runtime
	mu    sync.Mutex
	fails int
}

func (r *failingSandbox) StopSandbox(ctx context.Context, pod *corev1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fails > 0 {
		r.fails--
		return errors.New("sandbox busy")
	}
	return r.Runtime.StopSandbox(ctx, pod)
}

func (r *failingSandbox) left() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fails
}

// A pod past its active deadline whose stop fails is stopped again until
// it is, but its DeadlineExceeded and Killing Events are recorded once, as
// the kubelet records them once per pod.
func TestDeadlineEventsOnceWhileTheStopIsRetried(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := record.NewFakeRecorder(100)
	rt := &failingSandbox{Runtime: fakeruntime.New(0, rec), fails: 3}
	a, err := agent.New(client, rt, agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx, 1)
	pod := boundedPod()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod failed past its deadline", func() (bool, error) {
		got, err := client.CoreV1().Pods("default").Get(ctx, "bounded", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, nil
	})
	if n := rt.left(); n != 0 {
		t.Fatalf("%d sandbox stops left to fail: the stop was not retried", n)
	}
	count := map[string]int{}
	for len(rec.Events) > 0 {
		count[<-rec.Events]++
	}
	for _, e := range []string{"Normal DeadlineExceeded Pod was active on the node longer than the specified deadline", "Normal Killing Stopping container app"} {
		if count[e] != 1 {
			t.Errorf("%q recorded %d times, want once (all: %v)", e, count[e], count)
		}
	}
}

// laggingWatch delays the pod updates client's watches deliver until a
// time (in order, the later ones behind them), as a lagging watch delays
// them to the agent's cache; the writes themselves land at once. It counts
// the status writes and keeps the first start time written.
type laggingWatch struct {
	mu     sync.Mutex
	writes int
	first  *metav1.Time
}

func (l *laggingWatch) install(client *fake.Clientset, until time.Time) {
	client.PrependReactor("update", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			pod := action.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
			l.mu.Lock()
			l.writes++
			if l.first == nil {
				l.first = pod.Status.StartTime.DeepCopy()
			}
			l.mu.Unlock()
		}
		return false, nil, nil
	})
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		in, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		out := make(chan watch.Event)
		proxy := watch.NewProxyWatcher(out)
		go func() {
			defer in.Stop()
			for e := range in.ResultChan() {
				if e.Type == watch.Modified {
					time.Sleep(time.Until(until))
				}
				select {
				case out <- e:
				case <-proxy.StopChan():
					return
				}
			}
		}()
		return true, proxy, nil
	})
}

func (l *laggingWatch) counts() (int, *metav1.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, l.first
}

// A pod whose active deadline runs out before its first status write
// reaches the agent's cache is judged by the start time the agent gave it,
// as the kubelet judges it by its status manager's: failed on time, its
// start time kept (not moved to when the cache still lacked it), and with
// a few status writes, no loop of them while the cache catches up.
func TestDeadlineJudgedByTheStartTimeTheAgentKeeps(t *testing.T) {
	client := fake.NewClientset(deadlineNode())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	pod := boundedPod()
	// The pod's updates reach the agent's cache 1.5s after its creation,
	// after its deadline.
	lag := &laggingWatch{}
	created := time.Now()
	lag.install(client, created.Add(1500*time.Millisecond))
	go a.Run(ctx, 1)
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	poll(t, "the pod failed past its deadline", func() (bool, error) {
		got, err = client.CoreV1().Pods("default").Get(ctx, "bounded", metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodFailed, nil
	})
	failedAt := time.Now()
	time.Sleep(300 * time.Millisecond)
	writes, first := lag.counts()
	if first != nil && failedAt.Sub(first.Time) > 1400*time.Millisecond {
		t.Errorf("failed %s after its start, its deadline is 1s", failedAt.Sub(first.Time))
	}
	if first == nil || got.Status.StartTime == nil || !got.Status.StartTime.Equal(first) {
		t.Errorf("start time %v, want the first one written, %v", got.Status.StartTime, first)
	}
	if writes > 4 {
		t.Errorf("%d status writes, want a few", writes)
	}
}
