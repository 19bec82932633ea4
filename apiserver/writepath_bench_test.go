package apiserver_test

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// BenchmarkPodWritePath measures what one pod create, update and get
// costs the process (server and its one client-go client, over HTTPS with
// protobuf) in CPU time, with a watch of the pods open as a scheduler
// keeps one, so every write is also decoded and encoded for a watcher.
// cpu-µs/op is the process's user+system CPU time per call, which other
// work on the machine does not inflate as it does wall time; allocs/op
// and B/op count the allocations. Compare builds by running both
// alternately:
//
//	go test -run XXX -bench PodWritePath -benchtime 2000x -benchmem ./apiserver/
func BenchmarkPodWritePath(b *testing.B) {
	srv := apiservertest.Start(b)
	cfg := rest.CopyConfig(srv.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cs := clientsetFor(b, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The service account admission wants the default service account,
	// which the test server's controller may not have created yet.
	if _, err := cs.CoreV1().ServiceAccounts("bench").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	w, err := cs.CoreV1().Pods("bench").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for range w.ResultChan() {
		}
	}()
	pods := cs.CoreV1().Pods("bench")
	var created []*corev1.Pod
	// run numbers each run of a sub-benchmark (-count repeats them), so
	// the names it creates are new.
	run := 0
	b.Run("create", func(b *testing.B) {
		run++
		measureCPU(b, func(i int) {
			p, err := pods.Create(ctx, writePathPod(fmt.Sprintf("p-%d-%d", run, i)), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			created = append(created, p)
		})
	})
	if len(created) == 0 {
		b.Fatal("no pods created")
	}
	// binding is the scheduler's write: POST pods/<name>/binding of a pod
	// not yet bound, so each op binds a fresh pod created (untimed) first.
	b.Run("binding", func(b *testing.B) {
		b.StopTimer()
		run++
		names := make([]string, b.N)
		for i := range names {
			names[i] = fmt.Sprintf("b-%d-%d", run, i)
			if _, err := pods.Create(ctx, writePathPod(names[i]), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		measureCPU(b, func(i int) {
			err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: names[i]}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
		})
	})
	// status is the kubelet's write: PUT pods/<name>/status with the pod's
	// conditions and container status changed.
	b.Run("status", func(b *testing.B) {
		measureCPU(b, func(i int) {
			k := i % len(created)
			p := created[k].DeepCopy()
			writePathStatus(p, i)
			out, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			created[k] = out
		})
	})
	b.Run("update", func(b *testing.B) {
		run++
		measureCPU(b, func(i int) {
			k := i % len(created)
			p := created[k].DeepCopy()
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			// A value no earlier run wrote: a repeated write would be a
			// no-op, which costs something else.
			p.Annotations["bench.skiff.dev/round"] = fmt.Sprintf("%d-%d", run, i)
			out, err := pods.Update(ctx, p, metav1.UpdateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			created[k] = out
		})
	})
	// event is a kubelet's Event about a pod's container (core/v1, as the
	// kubelet's recorder writes it): at 1,000 hollow nodes there are three
	// for every pod.
	b.Run("event", func(b *testing.B) {
		run++
		events := cs.CoreV1().Events("bench")
		measureCPU(b, func(i int) {
			p := created[i%len(created)]
			if _, err := events.Create(ctx, writePathEvent(p, fmt.Sprintf("%s.%d-%d", p.Name, run, i)), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("get", func(b *testing.B) {
		measureCPU(b, func(i int) {
			if _, err := pods.Get(ctx, created[i%len(created)].Name, metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// measureCPU runs op b.N times and reports the process's CPU time per call.
func measureCPU(b *testing.B, op func(i int)) {
	b.ReportAllocs()
	before := processCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writePathPod is apibench's pod: about 1 KiB of JSON.
func writePathPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench", "tier": "web", "pod-template-hash": "5d8f9c7b6"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "registry.example.com/team/web:1.2.3",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
		}}},
	}
}

// writePathStatus sets the status a kubelet reports for a running pod,
// with round i in the container's restart count so every write changes it.
func writePathStatus(p *corev1.Pod, i int) {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP = "10.0.0.1"
	p.Status.PodIP = "10.244.0." + strconv.Itoa(i%250+2)
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "web", Image: "registry.example.com/team/web:1.2.3", ImageID: "docker-pullable://registry.example.com/team/web@sha256:0123",
		ContainerID: "containerd://abc", Ready: true, RestartCount: int32(i),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}}
}

// writePathEvent is the kubelet's "Started" Event for p's container.
func writePathEvent(p *corev1.Pod, name string) *corev1.Event {
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1",
			ResourceVersion: p.ResourceVersion, FieldPath: "spec.containers{web}",
		},
		Reason: "Started", Message: "Started container web", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
}
