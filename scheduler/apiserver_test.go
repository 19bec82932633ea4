package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
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

	node := schedtest.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").
		Capacity("cpu", "4", "memory", "8Gi", "pods", "110").Obj()
	created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = node.Status
	created.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
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
			runCtx, stop := context.WithCancel(ctx)
			factory := informers.NewSharedInformerFactory(cs, 0)
			s, err := scheduler.New(cs, factory, scheduler.Config{ScoringStrategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Run(runCtx); close(done) }()
			defer func() {
				stop()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()

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
