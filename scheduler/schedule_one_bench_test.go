package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// BenchmarkSchedulePod measures one scheduling cycle of one pod through the
// real framework and the default profile, without informers, queue or API
// calls: refresh the snapshot, PreFilter, Filter (adaptive
// percentageOfNodesToScore: about 420 of 1,000 nodes), PreScore, Score,
// select a host, then assume the pod there and forget it again (so every
// attempt starts from the same cluster, and the snapshot copies one changed
// node, as after a real bind). Besides ns/op it reports cpu-ns/op, the
// process CPU time per attempt across all goroutines. Nodes are the scale benchmark's hollow-node
// shape (4 CPU, 32Gi, 110 pods), each with one running pod.
func BenchmarkSchedulePod(b *testing.B) {
	for _, nodes := range []int{1000} {
		b.Run(fmt.Sprintf("%dNodes", nodes), func(b *testing.B) {
			s, err := New(fake.NewSimpleClientset(), informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0),
				Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < nodes; i++ {
				name := fmt.Sprintf("node-%d", i)
				s.cache.AddNode(schedtest.MakeNode().Name(name).Label("kubernetes.io/hostname", name).
					Capacity("cpu", "4", "memory", "32Gi", "pods", "110").Obj())
				p := schedtest.MakePod().Name(fmt.Sprintf("init-%d", i)).UID(fmt.Sprintf("init-%d", i)).
					Req("cpu", "100m", "memory", "500Mi").Node(name).Obj()
				s.cache.AddPod(p)
			}
			pod := schedtest.MakePod().Name("p").UID("p").Req("cpu", "100m", "memory", "500Mi").Obj()
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				state := framework.NewCycleState()
				host, err := s.schedulePod(ctx, state, pod)
				if err != nil {
					b.Fatal(err)
				}
				assumed := pod.DeepCopy()
				assumed.UID = types.UID("p")
				assumed.Spec.NodeName = host
				if err := s.cache.AssumePod(assumed); err != nil {
					b.Fatal(err)
				}
				if err := s.cache.ForgetPod(assumed); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user+system CPU time so far. On a shared
// machine wall time per op swings with the neighbours; CPU per op (all
// goroutines, GC included) is what the scheduler costs the server.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
