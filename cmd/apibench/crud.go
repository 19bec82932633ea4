package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// benchPod is a pod of the size and shape controllers write (about 1 KiB
// of JSON): labels, one container with ports, env and resources.
func benchPod(name string) *corev1.Pod {
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

// opResult is one kind of call measured by concurrent clients.
type opResult struct {
	name      string
	latencies []time.Duration
	elapsed   time.Duration
	errors    int
	firstErr  error
}

func (r opResult) throughput() float64 {
	return float64(len(r.latencies)) / r.elapsed.Seconds()
}

// runClients runs op in n clients for d; op's argument is the client index
// and the call number within that client.
func runClients(ctx context.Context, name string, n int, d time.Duration, op func(ctx context.Context, client, i int) error) opResult {
	var (
		mu  sync.Mutex
		res = opResult{name: name}
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			errs := 0
			var first error
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				if err := op(ctx, c, i); err != nil {
					errs++
					if first == nil {
						first = err
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// measureCRUD creates pods for a while, then reads them back, then
// updates them, each with o.clients concurrent clients that work on their
// own pods (so updates never conflict).
func measureCRUD(ctx context.Context, o options, cs *kubernetes.Clientset, ns string) ([]opResult, error) {
	pods := cs.CoreV1().Pods(ns)
	if o.crudWatchers > 0 {
		stop, err := watchPods(ctx, o, cs, ns)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	owned := make([][]*corev1.Pod, o.clients)
	var mu sync.Mutex
	create := runClients(ctx, "create", o.clients, o.duration, func(ctx context.Context, c, i int) error {
		p, err := pods.Create(ctx, benchPod(fmt.Sprintf("c%02d-%06d", c, i)), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		mu.Lock()
		owned[c] = append(owned[c], p)
		mu.Unlock()
		return nil
	})
	o.logf("create: %d pods in %s (%d errors)", len(create.latencies), create.elapsed.Round(time.Millisecond), create.errors)
	for c := range owned {
		if len(owned[c]) == 0 {
			return nil, fmt.Errorf("client %d created no pod in %s", c, o.duration)
		}
	}
	get := runClients(ctx, "get", o.clients, o.duration, func(ctx context.Context, c, i int) error {
		_, err := pods.Get(ctx, owned[c][i%len(owned[c])].Name, metav1.GetOptions{})
		return err
	})
	o.logf("get: %d calls in %s (%d errors)", len(get.latencies), get.elapsed.Round(time.Millisecond), get.errors)
	update := runClients(ctx, "update", o.clients, o.duration, func(ctx context.Context, c, i int) error {
		k := i % len(owned[c])
		p := owned[c][k].DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["bench.skiff.dev/round"] = strconv.Itoa(i)
		out, err := pods.Update(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		owned[c][k] = out
		return nil
	})
	o.logf("update: %d calls in %s (%d errors)", len(update.latencies), update.elapsed.Round(time.Millisecond), update.errors)
	for _, r := range []opResult{create, get, update} {
		if r.errors > 0 {
			return nil, fmt.Errorf("%s: %d calls failed, the first with: %w", r.name, r.errors, r.firstErr)
		}
	}
	return []opResult{create, get, update}, nil
}

// watchPods opens o.crudWatchers watches of the namespace's pods that read
// and drop every event until stop is called; stop reports how many each
// watch received.
func watchPods(ctx context.Context, o options, cs *kubernetes.Clientset, ns string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg     sync.WaitGroup
		events atomic.Int64
	)
	for range o.crudWatchers {
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			wg.Wait()
			return nil, fmt.Errorf("watch of the pods during the create, get and update runs: %w", err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-w.ResultChan():
					if !ok {
						return
					}
					events.Add(1)
				}
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
		o.logf("crud watchers: %d events received by %d watches", events.Load(), o.crudWatchers)
	}, nil
}
