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
		b.Run(fmt.Sprintf("%dNodes", nodes), func(b *testing.B) { benchSchedulePod(b, nodes, nil) })
	}
}

// BenchmarkSchedulePodColdCache is BenchmarkSchedulePod with the CPU caches
// flushed before each attempt (untimed), as in the server, where informers,
// the API server and storage run between two pods and each node's objects
// are fetched from memory again. Each flush takes milliseconds, so run it
// with a fixed count: -bench SchedulePodColdCache -benchtime 300x.
func BenchmarkSchedulePodColdCache(b *testing.B) {
	evict := make([]byte, 64<<20) // twice the L3 of the machines we bench on
	b.Run("1000Nodes", func(b *testing.B) {
		benchSchedulePod(b, 1000, func() {
			for i := 0; i < len(evict); i += 64 {
				evict[i]++
			}
		})
	})
}

func benchSchedulePod(b *testing.B, nodes int, between func()) {
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
	// Parsed once, as the queue does when the pod arrives.
	pi := framework.NewPodInfo(pod)
	ctx := context.Background()
	attempt := func() {
		// scheduleOne's steps, without the queue and the binding goroutine.
		state := framework.NewCycleState()
		state.WritePodInfo(pi)
		host, err := s.schedulePod(ctx, state, pod)
		if err != nil {
			b.Fatal(err)
		}
		assumed := pod.DeepCopy()
		assumed.UID = types.UID("p")
		assumed.Spec.NodeName = host
		assumedInfo := *pi
		assumedInfo.Pod = assumed
		if err := s.cache.AssumePodInfo(&assumedInfo); err != nil {
			b.Fatal(err)
		}
		if err := s.cache.ForgetPod(assumed); err != nil {
			b.Fatal(err)
		}
	}
	// As in a server that has been placing pods for a while, most nodes'
	// snapshot copies were made at different times, scattered in the heap
	// among other garbage, not laid out in node order by the first snapshot.
	for range 3 * nodes {
		attempt()
	}
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		if between != nil {
			b.StopTimer()
			between()
			b.StartTimer()
		}
		cpu0 := processCPU(b)
		attempt()
		cpu += processCPU(b) - cpu0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
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
