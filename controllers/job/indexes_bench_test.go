package job

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

// BenchmarkIndexedJobSyncHugeCompletions syncs an Indexed Job whose
// completions (10,000,000) dwarf its parallelism (100), half of its indexes
// done as one range plus a few scattered ones, with a few pods to count and
// some running: what a sync costs should follow the index lists' intervals,
// not the indexes they cover. Each iteration syncs a fresh copy (the first
// sync creates pods, which the next would wait for). Pod creates are
// answered without storing them, so the figure is the controller's.
func BenchmarkIndexedJobSyncHugeCompletions(b *testing.B) {
	var scattered []string
	for i := 5_000_001; i < 5_000_100; i += 2 {
		scattered = append(scattered, strconv.Itoa(i))
	}
	objs := func() []runtime.Object {
		j := newJob(indexedMode, completions(10_000_000), parallel(100))
		j.Status.CompletedIndexes = "0-4999999," + strings.Join(scattered, ",")
		j.Status.Succeeded = int32(5_000_000 + len(scattered))
		out := []runtime.Object{j}
		for i := range 10 { // running, scattered among the done
			out = append(out, newPod("run"+strconv.Itoa(i), corev1.PodRunning, index(strconv.Itoa(5_000_100+2*i))))
		}
		for i := range 3 { // succeeded, not yet counted
			out = append(out, newPod("ok"+strconv.Itoa(i), corev1.PodSucceeded, index(strconv.Itoa(5_000_200+i))))
		}
		return out
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		os := objs()
		client := controllertest.NewClient(os...)
		// The fake's tracker builds a REST mapper for each create, which
		// would weigh more than the sync: pod creates are answered as is.
		client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, a.(k8stesting.CreateAction).GetObject(), nil
		})
		f := informers.NewSharedInformerFactory(client, 0)
		c, err := New(client, f.Batch().V1().Jobs(), f.Core().V1().Pods(), record.NewFakeRecorder(1000), Options{Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		controllertest.Load(b, f.Batch().V1().Jobs().Informer(), os[0])
		controllertest.Load(b, f.Core().V1().Pods().Informer(), os[1:]...)
		b.StartTimer()
		if err := c.sync(context.Background(), "ns/work"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := len(controllertest.Filter(client.Actions(), "create", "pods")); n != 90 {
			b.Fatalf("created %d pods, want 90", n)
		}
		b.StartTimer()
	}
}
