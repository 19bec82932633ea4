package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// measured is a node whose measured memory the test sets.
type measured struct {
	mu        sync.Mutex
	available int64
}

func (m *measured) set(n int64) { m.mu.Lock(); m.available = n; m.mu.Unlock() }

func (m *measured) Observe(context.Context) (eviction.Observations, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return eviction.Observations{eviction.SignalMemoryAvailable: {Available: m.available, Capacity: 8 << 30}}, nil
}

func (m *measured) PodUsage(context.Context, *corev1.Pod) eviction.PodUsage {
	return eviction.PodUsage{Memory: map[string]int64{"app": 70 << 20}}
}

func condition(n *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestMemoryPressureConditionAndEviction(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	src := &measured{available: 4 << 30}
	hard, err := eviction.ParseThresholds("eviction-hard", "memory.available<100Mi")
	if err != nil {
		t.Fatal(err)
	}
	m, err := eviction.New(eviction.Config{Hard: hard, Source: src, MonitoringInterval: 20 * time.Millisecond, PressureTransitionPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Pressure: m, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 2)

	poll(t, "registration with pressure conditions False", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		c := condition(n, corev1.NodeMemoryPressure)
		return err == nil && c.Status == corev1.ConditionFalse && c.Reason == "KubeletHasSufficientMemory", nil
	})
	mk := func(name string, prio int32, memRequest string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", Priority: ptr.To(prio), Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if memRequest != "" {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memRequest)}
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, name+" running", func() (bool, error) {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}
	mk("web", 0, "")
	mk("critical", eviction.SystemCriticalPriority+1000, "")

	src.set(50 << 20)
	poll(t, "MemoryPressure=True", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		c := condition(n, corev1.NodeMemoryPressure)
		return err == nil && c.Status == corev1.ConditionTrue && c.Reason == "KubeletHasInsufficientMemory" &&
			c.Message == "kubelet has insufficient memory available", nil
	})
	var web *corev1.Pod
	poll(t, "web evicted", func() (bool, error) {
		web, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && web.Status.Phase == corev1.PodFailed, nil
	})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 70Mi, request is 0, has larger consumption of memory. "
	if web.Status.Reason != "Evicted" || web.Status.Message != want {
		t.Errorf("status reason %q message %q", web.Status.Reason, web.Status.Message)
	}
	if cs := web.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 137 || cs[0].Ready {
		t.Errorf("container statuses %+v", cs)
	}
	disrupted := false
	for _, c := range web.Status.Conditions {
		disrupted = disrupted || (c.Type == "DisruptionTarget" && c.Status == corev1.ConditionTrue && c.Reason == "TerminationByKubelet")
	}
	if !disrupted {
		t.Errorf("no DisruptionTarget condition: %+v", web.Status.Conditions)
	}
	// The critical pod is never evicted, however long the pressure lasts.
	time.Sleep(200 * time.Millisecond)
	if p, _ := client.CoreV1().Pods("default").Get(ctx, "critical", metav1.GetOptions{}); p.Status.Phase != corev1.PodRunning {
		t.Errorf("critical pod %s", p.Status.Phase)
	}

	// Admission under memory pressure: a new BestEffort pod is refused, a
	// pod with requests starts.
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default", UID: "uid-late"},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the BestEffort pod refused", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "late", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" &&
			p.Status.Message == "Pod was rejected: The node had condition: [MemoryPressure]. ", nil
	})
	burstable := late.DeepCopy()
	burstable.Name, burstable.UID = "burstable", "uid-burstable"
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	if _, err := client.CoreV1().Pods("default").Create(ctx, burstable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admitted: it runs (and, the pressure lasting, is evicted in its turn).
	poll(t, "the Burstable pod admitted", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "burstable", metav1.GetOptions{})
		return err == nil && (p.Status.Phase == corev1.PodRunning || strings.HasPrefix(p.Status.Message, "The node was low on resource")), nil
	})
	src.set(4 << 30)
	poll(t, "MemoryPressure=False after the transition period", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		return err == nil && condition(n, corev1.NodeMemoryPressure).Status == corev1.ConditionFalse, nil
	})
	// Events: the node's transitions, and the Warning on the pod.
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	all := strings.Join(events, "\n")
	for _, e := range []string{
		"Normal NodeHasSufficientMemory Node n status is now: NodeHasSufficientMemory",
		"Normal NodeHasInsufficientMemory Node n status is now: NodeHasInsufficientMemory",
		"Warning Evicted " + want,
	} {
		if !strings.Contains(all, e) {
			t.Errorf("no event %q in\n%s", e, all)
		}
	}
	if strings.Count(all, "Normal NodeHasInsufficientMemory") != 1 {
		t.Errorf("the transition recorded more than once:\n%s", all)
	}
}

// An evicted pod's containers and network are gone: its address goes back
// to the node's pool at once, not when the pod object is deleted. The node's
// pod CIDR here has room for a single pod.
func TestEvictedPodReleasesItsIP(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/30"}})
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 2)
	create := func(name string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	running := func(name string) *corev1.Pod {
		var p *corev1.Pod
		poll(t, name+" running", func() (bool, error) {
			var err error
			p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
		return p
	}
	create("first")
	first := running("first")
	if first.Status.PodIP != "10.42.0.2" {
		t.Fatalf("first pod IP %q", first.Status.PodIP)
	}
	if err := a.EvictPod(ctx, first, "The node was low on resource: memory. "); err != nil {
		t.Fatal(err)
	}
	create("second")
	if second := running("second"); second.Status.PodIP != "10.42.0.2" {
		t.Errorf("second pod IP %q, want the evicted pod's 10.42.0.2", second.Status.PodIP)
	}
	if p, _ := client.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{}); p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Evicted" {
		t.Errorf("evicted pod: phase %s reason %q", p.Status.Phase, p.Status.Reason)
	}
}

// failStatusWrites makes the client's pod status writes that match fail
// with 503 Service Unavailable, n times, as while the API server is briefly
// unreachable; it returns how many are left to fail.
func failStatusWrites(client *fake.Clientset, n int, match func(*corev1.Pod) bool) func() int {
	var mu sync.Mutex
	client.PrependReactor("update", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || !match(action.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)) {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, apierrors.NewServiceUnavailable("the server is shutting down")
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// countEvents drains rec and counts each Event.
func countEvents(rec *record.FakeRecorder) map[string]int {
	count := map[string]int{}
	for len(rec.Events) > 0 {
		count[<-rec.Events]++
	}
	return count
}

// An evicted pod whose Failed status cannot be written at first (the API
// server briefly unavailable) has it written once the server answers, as the
// kubelet's status manager keeps a pod's status until it is written: the
// API does not show the pod Running while its containers are gone. The
// eviction itself is done once the containers are stopped; they are
// stopped, and the Event recorded, once.
func TestEvictedStatusWrittenOnceTheAPIAnswers(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	rec := record.NewFakeRecorder(100)
	rt := &stopRecorder{Runtime: fakeruntime.New(0, nil), stopped: map[types.UID]int{}, killed: map[types.UID]int{}}
	a, err := agent.New(client, rt, agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 1)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var web *corev1.Pod
	poll(t, "web running", func() (bool, error) {
		web, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && web.Status.Phase == corev1.PodRunning, nil
	})
	left := failStatusWrites(client, 3, func(p *corev1.Pod) bool { return p.Status.Reason == eviction.Reason })
	const msg = "The node was low on resource: memory. "
	if err := a.EvictPod(ctx, web, msg); err != nil {
		t.Errorf("EvictPod: %v; want the eviction done once the containers are stopped", err)
	}
	poll(t, "web failed as evicted", func() (bool, error) {
		web, err = client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && web.Status.Phase == corev1.PodFailed && web.Status.Reason == eviction.Reason && web.Status.Message == msg, nil
	})
	if n := left(); n != 0 {
		t.Errorf("%d status writes left to fail", n)
	}
	if n := rt.kills(web.UID); n != 1 {
		t.Errorf("the evicted pod killed %d times, want once", n)
	}
	if n := countEvents(rec)["Warning Evicted "+msg]; n != 1 {
		t.Errorf("the Evicted Event recorded %d times, want once", n)
	}
}
