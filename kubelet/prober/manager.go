package prober

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is which of a container's probes.
type Kind string

const (
	Liveness  Kind = "liveness"
	Readiness Kind = "readiness"
	Startup   Kind = "startup"
)

// Key names one probe of one container incarnation.
type Key struct {
	ContainerID string
	Kind        Kind
}

// Manager owns the probe workers.
type Manager struct {
	ctx     context.Context
	mu      sync.Mutex
	workers map[Key]*worker
}

// NewManager returns a manager whose workers run until ctx ends or they are pruned.
func NewManager(ctx context.Context) *Manager {
	return &Manager{ctx: ctx, workers: map[Key]*worker{}}
}

type worker struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	result Result
	reason string
}

// initial is a probe's verdict before it has run: a container is not
// ready, nor started, until its probe says so; it is alive until proven
// otherwise.
func initial(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Ensure starts the worker for key unless it runs. gate, if not nil, holds
// the worker back until it returns true (liveness and readiness wait for the
// startup probe).
func (m *Manager) Ensure(key Key, p *corev1.Probe, t Target, gate func() bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workers[key]; ok {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	w := &worker{cancel: cancel, result: initial(key.Kind)}
	m.workers[key] = w
	go w.run(ctx, key.Kind, p, t, gate)
}

// Result is the probe's current verdict and the last failure's reason;
// Unknown if no worker runs for key.
func (m *Manager) Result(key Key) (Result, string) {
	m.mu.Lock()
	w, ok := m.workers[key]
	m.mu.Unlock()
	if !ok {
		return Unknown, ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.result, w.reason
}

// Prune stops the workers of containers not in keep.
func (m *Manager) Prune(keep func(containerID string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if !keep(k.ContainerID) {
			w.cancel()
			delete(m.workers, k)
		}
	}
}

// Len is the number of running workers.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

func seconds(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func (w *worker) run(ctx context.Context, kind Kind, p *corev1.Probe, t Target, gate func() bool) {
	period := seconds(p.PeriodSeconds, 10)
	success := int(p.SuccessThreshold)
	if success <= 0 || kind != Readiness {
		success = 1 // only readiness may ask for more (API validation agrees)
	}
	failure := int(p.FailureThreshold)
	if failure <= 0 {
		failure = 3
	}
	if gate != nil {
		for !gate() {
			if !sleep(ctx, time.Second) {
				return
			}
		}
	}
	if p.InitialDelaySeconds > 0 && !sleep(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return
	}
	var okRun, badRun int
	for {
		res, reason := Once(ctx, p, t)
		if ctx.Err() != nil {
			return
		}
		if res == Success {
			okRun, badRun = okRun+1, 0
		} else {
			okRun, badRun = 0, badRun+1
			if t.Failed != nil {
				t.Failed(kind, reason)
			}
		}
		w.mu.Lock()
		before := w.result
		switch {
		case res == Success && okRun >= success:
			w.result, w.reason = Success, ""
		case res != Success && badRun >= failure:
			w.result, w.reason = Failure, reason
		}
		changed := w.result != before
		done := kind == Startup && w.result == Success
		w.mu.Unlock()
		if changed && t.Changed != nil {
			t.Changed(kind)
		}
		if done {
			return // a startup probe stops once it has succeeded
		}
		if !sleep(ctx, period) {
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
