package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The other scheduler tests run on client-go's fake clientset, which serves
// every resource there is. This one runs each scoring profile against skiff's
// own API server: an informer a plugin opens for a resource skiff does not
// serve never syncs, and the scheduler would then never start (it happened
// with ReplicationControllers in the default spread constraints).
func TestEveryProfileSchedulesAgainstSkiffsAPIServer(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	createReadyNode(ctx, t, cs, schedtest.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").
		Capacity("cpu", "4", "memory", "8Gi", "pods", "110").Obj())
	// A Service selecting the pods sends them through the system default
	// spread constraints, which look up the pod's owners and Services.
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, strategy := range []string{scheduler.ScoringLeastAllocated, scheduler.ScoringMostAllocated} {
		t.Run(strategy, func(t *testing.T) {
			factory, done, stop := runScheduler(ctx, t, cs, scheduler.Config{ScoringStrategy: strategy})
			defer stop()

			pod := schedtest.MakePod().Name("web-"+strings.ToLower(strategy)).Namespace("default").Label("app", "web").Req("cpu", "100m").Obj()
			if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for {
				got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Spec.NodeName == "n1" {
					return
				}
				select {
				case err := <-done:
					t.Fatalf("the scheduler stopped before binding %s: %v", pod.Name, err)
				case <-ctx.Done():
					expired := make(chan struct{})
					close(expired)
					t.Fatalf("%s was not bound; informer caches synced: %v", pod.Name, factory.WaitForCacheSync(expired))
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}

// Preemption against skiff's API server: the victim gets the DisruptionTarget
// condition (a server-side apply of pods/status, as kube-scheduler sends it)
// and is deleted; with no node agent here it stays terminating, so the
// condition can be read back.
func TestPreemptionMarksTheVictimOnSkiffsAPIServer(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	createReadyNode(ctx, t, cs, schedtest.MakeNode().Name("small").Capacity("cpu", "1", "memory", "1Gi", "pods", "10").Obj())
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	victim := schedtest.MakePod().Name("victim").Namespace("default").Node("small").Req("cpu", "800m").Obj()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, victim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	_, _, stop := runScheduler(ctx, t, cs, scheduler.Config{})
	defer stop()

	vip := schedtest.MakePod().Name("vip").Namespace("default").Req("cpu", "500m").Obj()
	vip.Spec.PriorityClassName = "high"
	vip.Spec.Priority = nil
	if _, err := cs.CoreV1().Pods("default").Create(ctx, vip, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := cs.CoreV1().Pods("default").Get(ctx, "victim", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the victim: %v", err)
		}
		if got.DeletionTimestamp != nil {
			var cond *v1.PodCondition
			for i := range got.Status.Conditions {
				if got.Status.Conditions[i].Type == v1.DisruptionTarget {
					cond = &got.Status.Conditions[i]
				}
			}
			if cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != v1.PodReasonPreemptionByScheduler ||
				cond.Message != "default-scheduler: preempting to accommodate a higher priority pod" {
				t.Errorf("the preempted pod's DisruptionTarget condition: %+v", cond)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the victim was never deleted; vip: %+v", vip.Status)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for {
		evs, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=victim"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "Preempted" && strings.HasPrefix(e.Note, "Preempted by pod ") && strings.HasSuffix(e.Note, " on node small") {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no Preempted event on the victim: %+v", evs.Items)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestSchedulingGatesOnSkiffsAPIServer: a pod created with scheduling gates
// says SchedulingGated and stays unbound, whatever happens in the cluster,
// and cannot be bound by hand; removing its last gate gets it scheduled.
func TestSchedulingGatesOnSkiffsAPIServer(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, stop := runScheduler(ctx, t, cs, scheduler.Config{})
	defer stop()

	gated := schedtest.MakePod().Name("gated").Namespace("default").Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "ready"}}
	got, err := cs.CoreV1().Pods("default").Create(ctx, gated, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Status.Conditions; len(c) != 1 || c[0].Type != v1.PodScheduled || c[0].Status != v1.ConditionFalse ||
		c[0].Reason != v1.PodReasonSchedulingGated || c[0].Message != "Scheduling is blocked due to non-empty scheduling gates" {
		t.Errorf("a gated pod's conditions: %+v", c)
	}
	// A node appearing wakes unschedulable pods, not gated ones.
	createReadyNode(ctx, t, cs, schedtest.MakeNode().Name("n1").Capacity("cpu", "4", "memory", "8Gi", "pods", "10").Obj())
	time.Sleep(time.Second)
	if got, err = cs.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{}); err != nil || got.Spec.NodeName != "" {
		t.Fatalf("a gated pod was placed: node %q, %v", got.Spec.NodeName, err)
	}
	// Not even tried: an attempt would have left its own reason (the API
	// server refuses to bind a gated pod, so a try fails late).
	if c := got.Status.Conditions; len(c) != 1 || c[0].Reason != v1.PodReasonSchedulingGated {
		t.Errorf("the scheduler tried the gated pod: conditions %+v", c)
	}
	err = cs.CoreV1().Pods("default").Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Target: v1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "pod gated has non-empty .spec.schedulingGates") {
		t.Errorf("binding a gated pod by hand: %v, want 409", err)
	}
	// Gates go one by one (they may only be removed); the last one frees it.
	for _, gates := range [][]v1.PodSchedulingGate{{{Name: "ready"}}, nil} {
		got.Spec.SchedulingGates = gates
		if got, err = cs.CoreV1().Pods("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for got.Spec.NodeName == "" {
		select {
		case <-ctx.Done():
			t.Fatalf("the pod was not scheduled after its gates went: %+v", got.Status)
		case <-time.After(50 * time.Millisecond):
		}
		if got, err = cs.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Bound, it no longer reads as gated.
	if c := got.Status.Conditions; len(c) != 1 || c[0].Status != v1.ConditionTrue || c[0].Reason != "" || c[0].Message != "" {
		t.Errorf("a bound pod's conditions: %+v", c)
	}
}

// TestReadWriteOncePodOnSkiffsAPIServer: a second pod using a
// ReadWriteOncePod claim is unschedulable with kube-scheduler's message
// until the first pod is gone.
func TestReadWriteOncePodOnSkiffsAPIServer(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createReadyNode(ctx, t, cs, schedtest.MakeNode().Name("n1").Capacity("cpu", "4", "memory", "8Gi", "pods", "10").Obj())
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-solo"}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod},
		PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/solo"}},
		ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: "solo"},
	}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty := ""
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, VolumeName: "pv-solo", StorageClassName: &empty,
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, stop := runScheduler(ctx, t, cs, scheduler.Config{})
	defer stop()

	user := func(name string) {
		p := schedtest.MakePod().Name(name).Namespace("default").Obj()
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "solo"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod := func(name, what string, ok func(*v1.Pod) bool) {
		for {
			got, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err == nil && ok(got) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s never %s: %+v", name, what, got.Status)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	user("first")
	waitPod("first", "scheduled", func(p *v1.Pod) bool { return p.Spec.NodeName == "n1" })
	user("second")
	const want = "0/1 nodes are available: 1 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode."
	waitPod("second", "reported unschedulable", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable && strings.HasPrefix(c.Message, want) {
				return true
			}
		}
		return false
	})
	if err := cs.CoreV1().Pods("default").Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitPod("second", "scheduled once the first was gone", func(p *v1.Pod) bool { return p.Spec.NodeName == "n1" })
}

// createReadyNode writes node and a Ready status for it, as a node agent
// would.
func createReadyNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *v1.Node) {
	t.Helper()
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = node.Status
	created.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runScheduler runs a scheduler with cfg until the returned stop is called;
// stop reports an error Run returned. done yields Run's result if it ends
// early.
func runScheduler(ctx context.Context, t *testing.T, cs kubernetes.Interface, cfg scheduler.Config) (factory informers.SharedInformerFactory, done <-chan error, stop func()) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	factory = informers.NewSharedInformerFactory(cs, 0)
	s, err := scheduler.New(cs, factory, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- s.Run(runCtx); close(ch) }()
	return factory, ch, func() {
		cancel()
		if err := <-ch; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
