package scheduler

import (
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/metrics"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
)

// Scoring strategies accepted in Config.ScoringStrategy.
const (
	// ScoringLeastAllocated spreads pods over nodes (the default).
	ScoringLeastAllocated = string(noderesourcesfit.LeastAllocated)
	// ScoringMostAllocated packs pods onto as few nodes as possible.
	ScoringMostAllocated = string(noderesourcesfit.MostAllocated)
	// ScoringRequestedToCapacityRatio scores by a shape, which only
	// Plugins (a configuration file's NodeResourcesFit args) can give.
	ScoringRequestedToCapacityRatio = string(noderesourcesfit.RequestedToCapacityRatio)
)

// DefaultParallelism is Config.Parallelism's default, kube-scheduler's.
const DefaultParallelism = 16

// Config configures a Scheduler. The zero value is kube-scheduler's defaults.
type Config struct {
	// SchedulerName selects the pods this scheduler owns (spec.schedulerName);
	// default "default-scheduler".
	SchedulerName string
	// ScoringStrategy is LeastAllocated (spread, default) or MostAllocated
	// (bin-pack); RequestedToCapacityRatio only with Plugins giving its shape.
	ScoringStrategy string
	// Parallelism bounds the goroutines filtering and scoring nodes;
	// default DefaultParallelism.
	Parallelism int
	// PercentageOfNodesToScore stops filtering once this share of nodes is
	// feasible (at least 100 nodes); 0 picks it adaptively from cluster size
	// as kube-scheduler does, 100 always checks every node.
	PercentageOfNodesToScore int32
	// PodInitialBackoff and PodMaxBackoff bound the retry backoff (1s, 10s).
	PodInitialBackoff time.Duration
	PodMaxBackoff     time.Duration
	// AssumedPodTTL is how long a bound pod is counted before the informer
	// must confirm it (30s).
	AssumedPodTTL time.Duration
	// Plugins replaces the default profile (plugins.DefaultProfile).
	Plugins []runtime.PluginConfig
	// Registry adds out-of-tree plugins to the in-tree ones.
	Registry runtime.Registry
	// Logger receives the scheduler's logs; default slog.Default().
	Logger *slog.Logger
	// Metrics receives the scheduler's Prometheus metrics; the process
	// registers it once and hands it to each scheduler it builds. Nil
	// keeps them private.
	Metrics *metrics.Metrics
}

func (c *Config) setDefaults() error {
	if c.SchedulerName == "" {
		c.SchedulerName = v1.DefaultSchedulerName
	}
	switch c.ScoringStrategy {
	case "":
		c.ScoringStrategy = ScoringLeastAllocated
	case ScoringLeastAllocated, ScoringMostAllocated:
	case ScoringRequestedToCapacityRatio:
		if c.Plugins == nil {
			return fmt.Errorf("scheduler: ScoringStrategy %s needs a shape: set it in NodeResourcesFit's args in the configuration file", c.ScoringStrategy)
		}
	default:
		return fmt.Errorf("scheduler: ScoringStrategy %q is not valid: use %s (spread) or %s (bin-pack)", c.ScoringStrategy, ScoringLeastAllocated, ScoringMostAllocated)
	}
	if c.Parallelism < 0 {
		return fmt.Errorf("scheduler: Parallelism %d must not be negative", c.Parallelism)
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("scheduler: PercentageOfNodesToScore %d must be within 0..100", c.PercentageOfNodesToScore)
	}
	if c.PodInitialBackoff < 0 || c.PodMaxBackoff < 0 || c.AssumedPodTTL < 0 {
		return fmt.Errorf("scheduler: backoff and TTL durations must not be negative")
	}
	if c.PodInitialBackoff > 0 && c.PodMaxBackoff > 0 && c.PodMaxBackoff < c.PodInitialBackoff {
		return fmt.Errorf("scheduler: PodMaxBackoff %v is below PodInitialBackoff %v", c.PodMaxBackoff, c.PodInitialBackoff)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
