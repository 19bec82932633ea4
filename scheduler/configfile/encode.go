package configfile

import (
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	componentbase "k8s.io/component-base/config/v1alpha1"
	schedv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/balancedallocation"
	"github.com/skiffkube/skiff/scheduler/plugins/defaultpreemption"
	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/plugins/volumebinding"
	"github.com/skiffkube/skiff/scheduler/queue"
)

// Process is what the scheduler's flags set rather than the file: its
// connection to the API server, its Lease timing and --profiling.
type Process struct {
	Kubeconfig                                string
	QPS                                       float32
	Burst                                     int
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Profiling                                 bool
}

// Encode is the KubeSchedulerConfiguration a scheduler built from cfg and
// run as p says works by, defaults filled in as the scheduler fills them:
// what kube-scheduler serves on /configz. Parse reads its scheduling part
// back into an equivalent Config; the process settings it refuses.
func Encode(cfg scheduler.Config, p Process) (*schedv1.KubeSchedulerConfiguration, error) {
	name := cfg.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName
	}
	parallelism := cfg.Parallelism
	if parallelism == 0 {
		parallelism = scheduler.DefaultParallelism
	}
	initial, maxBackoff := cfg.PodInitialBackoff, cfg.PodMaxBackoff
	if initial <= 0 {
		initial = queue.DefaultInitialBackoff
	}
	if maxBackoff <= 0 {
		maxBackoff = queue.DefaultMaxBackoff
	}
	profile := cfg.Plugins
	if profile == nil {
		profile = plugins.DefaultProfile(noderesourcesfit.ScoringStrategy(cfg.ScoringStrategy))
	}
	// The whole profile, in order: every default off, then each plugin on.
	prof := schedv1.KubeSchedulerProfile{SchedulerName: ptr.To(name), Plugins: &schedv1.Plugins{
		MultiPoint: schedv1.PluginSet{Disabled: []schedv1.Plugin{{Name: "*"}}},
	}}
	for _, pc := range profile {
		pl := schedv1.Plugin{Name: pc.Name}
		if pc.Weight > 0 {
			pl.Weight = ptr.To(int32(pc.Weight))
		}
		prof.Plugins.MultiPoint.Enabled = append(prof.Plugins.MultiPoint.Enabled, pl)
		if pc.NoScore {
			prof.Plugins.Score.Disabled = append(prof.Plugins.Score.Disabled, schedv1.Plugin{Name: pc.Name})
		}
		args, err := encodeArgs(pc.Name, pc.Args)
		if err != nil {
			return nil, err
		}
		if args != nil {
			prof.PluginConfig = append(prof.PluginConfig, schedv1.PluginConfig{Name: pc.Name, Args: runtime.RawExtension{Raw: args}})
		}
	}
	return &schedv1.KubeSchedulerConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		Parallelism:              ptr.To(int32(parallelism)),
		PercentageOfNodesToScore: ptr.To(cfg.PercentageOfNodesToScore),
		PodInitialBackoffSeconds: ptr.To(int64(initial / time.Second)),
		PodMaxBackoffSeconds:     ptr.To(int64(maxBackoff / time.Second)),
		Profiles:                 []schedv1.KubeSchedulerProfile{prof},
		LeaderElection: componentbase.LeaderElectionConfiguration{
			LeaderElect:   ptr.To(true),
			LeaseDuration: metav1.Duration{Duration: p.LeaseDuration}, RenewDeadline: metav1.Duration{Duration: p.RenewDeadline},
			RetryPeriod:  metav1.Duration{Duration: p.RetryPeriod},
			ResourceLock: "leases", ResourceName: scheduler.DefaultLeaseName, ResourceNamespace: metav1.NamespaceSystem,
		},
		ClientConnection:       componentbase.ClientConnectionConfiguration{Kubeconfig: p.Kubeconfig, QPS: p.QPS, Burst: int32(p.Burst)},
		DebuggingConfiguration: componentbase.DebuggingConfiguration{EnableProfiling: ptr.To(p.Profiling)},
	}, nil
}

// encodeArgs is the args of a plugin that takes some, as its plugin fills
// in the defaults; nil for the others.
func encodeArgs(name string, args any) ([]byte, error) {
	switch name {
	case noderesourcesfit.Name:
		a, _, err := framework.PluginArgs[noderesourcesfit.Args](name, args)
		if err != nil {
			return nil, err
		}
		if a.ScoringStrategy == "" {
			a.ScoringStrategy = noderesourcesfit.LeastAllocated
		}
		if len(a.Resources) == 0 {
			a.Resources = noderesourcesfit.DefaultResources()
		}
		s := &schedv1.ScoringStrategy{Type: schedv1.ScoringStrategyType(a.ScoringStrategy)}
		if len(a.Shape) > 0 {
			s.RequestedToCapacityRatio = &schedv1.RequestedToCapacityRatioParam{}
			for _, p := range a.Shape {
				s.RequestedToCapacityRatio.Shape = append(s.RequestedToCapacityRatio.Shape,
					schedv1.UtilizationShapePoint{Utilization: int32(p.Utilization), Score: int32(p.Score)})
			}
		}
		for _, r := range a.Resources {
			s.Resources = append(s.Resources, schedv1.ResourceSpec{Name: string(r.Name), Weight: r.Weight})
		}
		return json.Marshal(&schedv1.NodeResourcesFitArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "NodeResourcesFitArgs"}, ScoringStrategy: s,
			IgnoredResources: a.IgnoredResources, IgnoredResourceGroups: a.IgnoredResourceGroups})
	case volumebinding.Name:
		a, _, err := framework.PluginArgs[volumebinding.Args](name, args)
		if err != nil {
			return nil, err
		}
		if a.BindTimeout <= 0 {
			a.BindTimeout = volumebinding.DefaultBindTimeout
		}
		return json.Marshal(&schedv1.VolumeBindingArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "VolumeBindingArgs"},
			BindTimeoutSeconds: ptr.To(int64(a.BindTimeout / time.Second))})
	case interpodaffinity.Name:
		// Written only when configured, so that a file without them reads back as itself.
		a, set, err := framework.PluginArgs[interpodaffinity.Args](name, args)
		if err != nil || !set {
			return nil, err
		}
		w := a.HardPodAffinityWeight
		if w == nil {
			w = ptr.To[int32](interpodaffinity.DefaultHardPodAffinityWeight)
		}
		return json.Marshal(&schedv1.InterPodAffinityArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "InterPodAffinityArgs"},
			HardPodAffinityWeight: w, IgnorePreferredTermsOfExistingPods: a.IgnorePreferredTermsOfExistingPods})
	case defaultpreemption.Name:
		// Written only when configured, so that a file without them reads back as itself.
		a, set, err := framework.PluginArgs[defaultpreemption.Args](name, args)
		if err != nil || !set {
			return nil, err
		}
		a = a.WithDefaults()
		return json.Marshal(&schedv1.DefaultPreemptionArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "DefaultPreemptionArgs"},
			MinCandidateNodesPercentage: a.MinCandidateNodesPercentage, MinCandidateNodesAbsolute: a.MinCandidateNodesAbsolute})
	case balancedallocation.Name:
		// Written only when configured, so that a file without them reads back as itself.
		a, set, err := framework.PluginArgs[balancedallocation.Args](name, args)
		if err != nil || !set {
			return nil, err
		}
		if len(a.Resources) == 0 {
			a.Resources = balancedallocation.DefaultResources()
		}
		out := &schedv1.NodeResourcesBalancedAllocationArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "NodeResourcesBalancedAllocationArgs"}}
		for _, r := range a.Resources {
			out.Resources = append(out.Resources, schedv1.ResourceSpec{Name: string(r), Weight: 1})
		}
		return json.Marshal(out)
	case nodeaffinity.Name:
		// Written only when configured, so that a file without them reads back as itself.
		a, set, err := framework.PluginArgs[nodeaffinity.Args](name, args)
		if err != nil || !set {
			return nil, err
		}
		return json.Marshal(&schedv1.NodeAffinityArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "NodeAffinityArgs"},
			AddedAffinity: a.AddedAffinity})
	case podtopologyspread.Name:
		// Written only when configured, so that a file without them reads back as itself.
		a, set, err := framework.PluginArgs[podtopologyspread.Args](name, args)
		if err != nil || !set {
			return nil, err
		}
		if a.DefaultingType == "" {
			a.DefaultingType = podtopologyspread.SystemDefaulting
		}
		return json.Marshal(&schedv1.PodTopologySpreadArgs{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: "PodTopologySpreadArgs"},
			DefaultingType: schedv1.PodTopologySpreadConstraintsDefaulting(a.DefaultingType), DefaultConstraints: a.DefaultConstraints})
	}
	if args != nil {
		return nil, fmt.Errorf("plugin %s: args %T cannot be written as kube-scheduler's", name, args)
	}
	return nil, nil
}
