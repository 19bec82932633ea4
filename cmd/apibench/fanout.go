package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// watchersPerConn keeps each HTTP/2 connection below the server's limit of
// concurrent streams (Go's default is 250), as separate clients would be.
const watchersPerConn = 200

// fanoutResult holds, for every write, how long each watcher took to see it.
type fanoutResult struct {
	watchers  int
	writes    int
	latencies []time.Duration
	// slowestPerWrite is the last watcher's latency for each write.
	slowestPerWrite []time.Duration
}

// measureFanout opens o.watchers watches on ns, then writes o.writes
// ConfigMaps one at a time, each once every watcher has seen the one
// before, and records from the start of each write to each watcher's
// receipt of its ADDED event.
func measureFanout(ctx context.Context, o options, base *rest.Config, ns string) (*fanoutResult, error) {
	admin, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	list, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type seen struct {
		name string
		at   time.Time
	}
	events := make(chan seen, o.watchers*2)
	var watches []watch.Interface
	defer func() {
		for _, w := range watches {
			w.Stop()
		}
	}()
	var cs *kubernetes.Clientset
	for i := 0; i < o.watchers; i++ {
		if i%watchersPerConn == 0 {
			cfg := rest.CopyConfig(base)
			// A dialer of its own gives the group its own connection
			// (client-go shares transports between equal configs).
			cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
			if cs, err = kubernetes.NewForConfig(cfg); err != nil {
				return nil, err
			}
		}
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return nil, fmt.Errorf("opening watch %d: %w", i, err)
		}
		watches = append(watches, w)
	}
	o.logf("fan-out: %d watches open", len(watches))
	var wg sync.WaitGroup
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added {
					select {
					case events <- seen{name: cm.Name, at: time.Now()}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	res := &fanoutResult{watchers: o.watchers, writes: o.writes}
	for k := 0; k < o.writes; k++ {
		name := fmt.Sprintf("fanout-%d", k)
		start := time.Now()
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		timeout := time.After(30 * time.Second)
		var slowest time.Duration
		for got := 0; got < o.watchers; {
			select {
			case s := <-events:
				if s.name != name {
					return nil, fmt.Errorf("a watcher saw %s while %s was expected", s.name, name)
				}
				d := s.at.Sub(start)
				res.latencies = append(res.latencies, d)
				slowest = max(slowest, d)
				got++
			case <-timeout:
				return nil, fmt.Errorf("write %d: only %d of %d watchers saw it within 30s", k, got, o.watchers)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		res.slowestPerWrite = append(res.slowestPerWrite, slowest)
	}
	o.logf("fan-out: %d writes seen by all %d watchers", o.writes, o.watchers)
	cancel()
	for _, w := range watches {
		w.Stop()
	}
	wg.Wait()
	return res, nil
}
