package eviction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/skiffkube/skiff/apiserver/qos"
)

// Defaults as the kubelet's.
const (
	DefaultPressureTransitionPeriod = 5 * time.Minute
	DefaultMonitoringInterval       = 10 * time.Second
)

// Reclaimer frees node-level resources before pods are evicted (the
// kubelet deletes unused images and dead containers for the disk signals).
// Reclaim is called with the signal whose threshold is crossed; the signals
// are measured again afterwards.
type Reclaimer interface {
	Reclaim(ctx context.Context, signal Signal) error
}

// Pods is the node's side: its pods and how one is evicted.
type Pods interface {
	// ActivePods are the pods the node runs (not terminal).
	ActivePods() []*corev1.Pod
	// EvictPod stops the pod's containers at once and fails it with reason
	// Evicted and message, returning once the containers are stopped.
	EvictPod(ctx context.Context, pod *corev1.Pod, message string) error
}

// Config of a Manager.
type Config struct {
	// Hard thresholds (--eviction-hard); none disables eviction and the
	// pressure conditions stay False.
	Hard []Threshold
	// PressureTransitionPeriod is how long a condition stays True after its
	// signal went back above the threshold (default 5m).
	PressureTransitionPeriod time.Duration
	// MonitoringInterval between measurements (default 10s).
	MonitoringInterval time.Duration
	// Source measures the node (required).
	Source Source
	// Reclaimer, when set, is asked to free disk before a pod is evicted.
	Reclaimer Reclaimer
	Logger    *slog.Logger
	Now       func() time.Time
}

// Manager measures, reports the pressure conditions and evicts.
type Manager struct {
	cfg Config

	mu sync.Mutex
	// lastObserved is when each condition's threshold was last met.
	lastObserved map[corev1.NodeConditionType]time.Time
	conditions   map[corev1.NodeConditionType]bool
	observations Observations
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Manager, error) {
	if cfg.Source == nil {
		return nil, errors.New("eviction: a Source is required")
	}
	if cfg.PressureTransitionPeriod < 0 || cfg.MonitoringInterval < 0 {
		return nil, errors.New("eviction: negative period")
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.MonitoringInterval == 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{cfg: cfg, lastObserved: map[corev1.NodeConditionType]time.Time{}, conditions: map[corev1.NodeConditionType]bool{}}, nil
}

// UnderPressure reports whether the node condition (MemoryPressure,
// DiskPressure, PIDPressure) is True.
func (m *Manager) UnderPressure(t corev1.NodeConditionType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conditions[t]
}

// Run measures every MonitoringInterval until ctx ends, calling changed
// when a pressure condition flips and evicting pods while a threshold is
// crossed.
func (m *Manager) Run(ctx context.Context, pods Pods, changed func()) {
	t := time.NewTicker(m.cfg.MonitoringInterval)
	defer t.Stop()
	for {
		if _, err := m.synchronize(ctx, pods, changed); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("eviction manager", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// synchronize is one pass: measure, update the conditions, reclaim or
// evict at most one pod (returned).
func (m *Manager) synchronize(ctx context.Context, pods Pods, changed func()) (*corev1.Pod, error) {
	obs, obsErr := m.cfg.Source.Observe(ctx)
	if obsErr != nil {
		// Some signals may be missing; the measured ones still count.
		m.cfg.Logger.Warn("eviction manager: measuring the node", "err", obsErr)
	}
	met := thresholdsMet(m.cfg.Hard, obs)
	if m.updateConditions(met, obs) && changed != nil {
		changed()
	}
	if len(met) == 0 || pods == nil {
		return nil, nil
	}
	t := met[0]
	if r := m.cfg.Reclaimer; r != nil && t.Signal.Condition() == corev1.NodeDiskPressure {
		if err := r.Reclaim(ctx, t.Signal); err != nil {
			m.cfg.Logger.Warn("eviction manager: node-level reclaim failed", "signal", t.Signal, "err", err)
		} else if again, err := m.cfg.Source.Observe(ctx); err == nil || len(again) > 0 {
			if len(thresholdsMet([]Threshold{t}, again)) == 0 {
				m.cfg.Logger.Info("eviction manager: node-level reclaim freed enough", "signal", t.Signal)
				return nil, nil
			}
			obs = again
		}
	}
	ranked := candidates(ctx, m.cfg.Source, pods.ActivePods())
	if len(ranked) == 0 {
		m.cfg.Logger.Debug("eviction manager: threshold crossed and no pod may be evicted", "threshold", t.String())
		return nil, nil
	}
	rank(t.Signal, ranked)
	victim := ranked[0]
	msg := message(t, obs[t.Signal], victim.pod, victim.usage)
	m.cfg.Logger.Info("eviction manager: evicting pod", "pod", victim.pod.Namespace+"/"+victim.pod.Name, "threshold", t.String(), "message", msg)
	if err := pods.EvictPod(ctx, victim.pod, msg); err != nil {
		return nil, fmt.Errorf("evicting %s/%s: %w", victim.pod.Namespace, victim.pod.Name, err)
	}
	return victim.pod, nil
}

// updateConditions records the conditions whose thresholds are met now and
// keeps each True until PressureTransitionPeriod after it was last met. It
// reports whether any condition flipped.
func (m *Manager) updateConditions(met []Threshold, obs Observations) bool {
	now := m.cfg.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observations = obs
	for _, t := range met {
		m.lastObserved[t.Signal.Condition()] = now
	}
	flipped := false
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		at, ok := m.lastObserved[c]
		on := ok && now.Sub(at) < m.cfg.PressureTransitionPeriod
		if on != m.conditions[c] {
			flipped = true
			m.conditions[c] = on
		}
	}
	return flipped
}

// Admit says whether a new pod may start on the node, as the kubelet's
// eviction admission: any pod while there is no pressure, and critical
// pods always; under memory pressure alone, pods that are not BestEffort
// or that tolerate the memory-pressure taint; under any other pressure,
// none. A refused pod is failed with reason Evicted and the message.
func (m *Manager) Admit(pod *corev1.Pod) (bool, string) {
	m.mu.Lock()
	var conds []corev1.NodeConditionType
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if m.conditions[c] {
			conds = append(conds, c)
		}
	}
	m.mu.Unlock()
	if len(conds) == 0 || isCritical(pod) {
		return true, ""
	}
	if len(conds) == 1 && conds[0] == corev1.NodeMemoryPressure {
		if qos.Of(pod) != corev1.PodQOSBestEffort || toleratesMemoryPressure(pod) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("The node had condition: %v. ", conds)
}

func toleratesMemoryPressure(pod *corev1.Pod) bool {
	taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), taint, false) {
			return true
		}
	}
	return false
}
