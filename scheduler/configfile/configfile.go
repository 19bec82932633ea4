// Package configfile reads kube-scheduler's configuration file (a
// KubeSchedulerConfiguration of kubescheduler.config.k8s.io/v1, the
// file of kube-scheduler --config) into a scheduler.Config, so that a
// cluster's scheduler is configured as Kubernetes users know: spread or
// bin-pack by NodeResourcesFit's scoringStrategy, plugins enabled,
// disabled and weighted, backoff and the share of nodes scored.
//
// What the file may say and skiff's scheduler cannot do is refused with
// the field's path and the reason, never dropped: a setting that seems to
// apply and does not is worse than an error at start.
package configfile

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	componentbase "k8s.io/component-base/config/v1alpha1"
	schedv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/skiffkube/skiff/scheduler"
	fwruntime "github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/balancedallocation"
	"github.com/skiffkube/skiff/scheduler/plugins/defaultpreemption"
	"github.com/skiffkube/skiff/scheduler/plugins/imagelocality"
	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/plugins/queuesort"
	"github.com/skiffkube/skiff/scheduler/plugins/volumebinding"
)

// Kind and APIVersion the file must declare.
const (
	Kind       = "KubeSchedulerConfiguration"
	APIVersion = "kubescheduler.config.k8s.io/v1"
)

// Load reads the file at path; see Parse.
func Load(path string) (scheduler.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return scheduler.Config{}, err
	}
	return Parse(data)
}

// Parse turns a KubeSchedulerConfiguration (YAML or JSON) into the
// scheduler.Config it describes. Unknown fields are errors, as are fields
// of Kubernetes' format that skiff's scheduler does not honour. Logger,
// Metrics and Registry are left for the caller.
func Parse(data []byte) (scheduler.Config, error) {
	var cfg scheduler.Config
	var f schedv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return cfg, fmt.Errorf("not a %s: %w", Kind, err)
	}
	if f.Kind != Kind || f.APIVersion != APIVersion {
		return cfg, fmt.Errorf("apiVersion %q, kind %q: want apiVersion %s, kind %s", f.APIVersion, f.Kind, APIVersion, Kind)
	}
	if err := refuseProcessSettings(&f); err != nil {
		return cfg, err
	}
	if p := f.Parallelism; p != nil {
		if *p <= 0 {
			return cfg, fmt.Errorf("parallelism: must be positive, got %d", *p)
		}
		cfg.Parallelism = int(*p)
	}
	var err error
	if cfg.PercentageOfNodesToScore, err = percentage("percentageOfNodesToScore", f.PercentageOfNodesToScore, 0); err != nil {
		return cfg, err
	}
	if cfg.PodInitialBackoff, err = seconds("podInitialBackoffSeconds", f.PodInitialBackoffSeconds); err != nil {
		return cfg, err
	}
	if cfg.PodMaxBackoff, err = seconds("podMaxBackoffSeconds", f.PodMaxBackoffSeconds); err != nil {
		return cfg, err
	}
	if cfg.PodInitialBackoff > 0 && cfg.PodMaxBackoff > 0 && cfg.PodMaxBackoff < cfg.PodInitialBackoff {
		return cfg, fmt.Errorf("podMaxBackoffSeconds: must not be less than podInitialBackoffSeconds")
	}
	switch len(f.Profiles) {
	case 0:
		return cfg, nil
	case 1:
	default:
		return cfg, fmt.Errorf("profiles: skiff runs one scheduler profile, the file has %d", len(f.Profiles))
	}
	prof := f.Profiles[0]
	if prof.SchedulerName != nil {
		if *prof.SchedulerName == "" {
			return cfg, fmt.Errorf("profiles[0].schedulerName: must not be empty")
		}
		cfg.SchedulerName = *prof.SchedulerName
	}
	// The profile's wins, as in kube-scheduler.
	if cfg.PercentageOfNodesToScore, err = percentage("profiles[0].percentageOfNodesToScore", prof.PercentageOfNodesToScore, cfg.PercentageOfNodesToScore); err != nil {
		return cfg, err
	}
	profile := plugins.DefaultProfile(noderesourcesfit.LeastAllocated)
	if prof.Plugins != nil {
		if profile, err = applyPlugins(profile, prof.Plugins); err != nil {
			return cfg, err
		}
	}
	if profile, err = applyPluginConfig(profile, prof.PluginConfig); err != nil {
		return cfg, err
	}
	cfg.Plugins = profile
	for _, pc := range profile {
		if a, ok := pc.Args.(noderesourcesfit.Args); ok && pc.Name == noderesourcesfit.Name {
			cfg.ScoringStrategy = string(a.ScoringStrategy)
		}
	}
	return cfg, nil
}

// refuseProcessSettings refuses what the file may say about the process
// rather than the scheduling: skiff takes those from flags (the
// kubeconfig, leader election, profiling) or does not have them
// (extenders). leaderElect: true is what skiff does anyway.
func refuseProcessSettings(f *schedv1.KubeSchedulerConfiguration) error {
	le := f.LeaderElection
	if le.LeaderElect != nil {
		if !*le.LeaderElect {
			return fmt.Errorf("leaderElection.leaderElect: skiff's scheduler always elects a leader on the kube-system/kube-scheduler Lease")
		}
		le.LeaderElect = nil
	}
	if !equality.Semantic.DeepEqual(le, componentbase.LeaderElectionConfiguration{}) {
		return fmt.Errorf("leaderElection: set the timing with --leader-elect-lease-duration, --leader-elect-renew-deadline and --leader-elect-retry-period (skiff server: the settings of those names); the Lease is always kube-system/kube-scheduler")
	}
	if !equality.Semantic.DeepEqual(f.ClientConnection, componentbase.ClientConnectionConfiguration{}) {
		return fmt.Errorf("clientConnection: set the connection with --kubeconfig, --kube-api-qps and --kube-api-burst (in skiff server the scheduler talks to its own API server)")
	}
	if !equality.Semantic.DeepEqual(f.DebuggingConfiguration, componentbase.DebuggingConfiguration{}) {
		return fmt.Errorf("enableProfiling, enableContentionProfiling: use --profiling")
	}
	if len(f.Extenders) > 0 {
		return fmt.Errorf("extenders: skiff's scheduler does not call scheduler extenders")
	}
	if f.DelayCacheUntilActive {
		return fmt.Errorf("delayCacheUntilActive: skiff's scheduler fills its cache before it campaigns")
	}
	return nil
}

// percentage checks an optional percentageOfNodesToScore; unset keeps def.
func percentage(field string, p *int32, def int32) (int32, error) {
	if p == nil {
		return def, nil
	}
	if *p < 0 || *p > 100 {
		return 0, fmt.Errorf("%s: must be 0 (adaptive) to 100, got %d", field, *p)
	}
	return *p, nil
}

// seconds converts an optional positive number of seconds.
func seconds(field string, v *int64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	if *v <= 0 {
		return 0, fmt.Errorf("%s: must be a positive number of seconds, got %d", field, *v)
	}
	return time.Duration(*v) * time.Second, nil
}

// scoreOnly are the plugins that only score: enabling one under score
// alone is enabling it. The others also filter, reserve or bind, and skiff
// runs a plugin at all its extension points but, optionally, its score.
var scoreOnly = []string{balancedallocation.Name, imagelocality.Name}

// maxPluginWeight bounds a score plugin's weight, as kube-scheduler does
// for the in-tree plugins' scores of 0–100.
const maxPluginWeight = 100

// applyPlugins applies the profile's plugin sets to skiff's default
// profile. multiPoint enables (with a weight) or disables a plugin as a
// whole; score sets a plugin's weight, or turns its score off (NoScore)
// while it goes on filtering. "*" disables every plugin of that set. The
// other extension points would need a plugin to run at some of its points
// and not others, which skiff's framework does only for scoring.
func applyPlugins(profile []fwruntime.PluginConfig, p *schedv1.Plugins) ([]fwruntime.PluginConfig, error) {
	other := map[string]schedv1.PluginSet{
		"preEnqueue": p.PreEnqueue, "preFilter": p.PreFilter, "filter": p.Filter,
		"postFilter": p.PostFilter, "preScore": p.PreScore, "reserve": p.Reserve, "permit": p.Permit,
		"preBind": p.PreBind, "bind": p.Bind, "postBind": p.PostBind, "placementGenerate": p.PlacementGenerate,
		"placementScore": p.PlacementScore, "podGroupPostFilter": p.PodGroupPostFilter,
	}
	for _, point := range slices.Sorted(maps.Keys(other)) {
		if set := other[point]; len(set.Enabled) > 0 || len(set.Disabled) > 0 {
			return nil, fmt.Errorf("profiles[0].plugins.%s: skiff runs each plugin at all its extension points (its score may be turned off); enable, disable or weigh plugins under multiPoint, score or (PrioritySort) queueSort", point)
		}
	}
	known := plugins.Registry()
	index := func(name string) int {
		return slices.IndexFunc(profile, func(c fwruntime.PluginConfig) bool { return c.Name == name })
	}
	weight := func(field string, pl schedv1.Plugin) (int64, error) {
		if pl.Weight == nil || *pl.Weight == 0 {
			return 0, nil
		}
		if *pl.Weight < 0 || *pl.Weight > maxPluginWeight {
			return 0, fmt.Errorf("%s: weight of %s must be 1-%d, got %d", field, pl.Name, maxPluginWeight, *pl.Weight)
		}
		return int64(*pl.Weight), nil
	}

	// A misspelt name would otherwise disable nothing, silently.
	for _, set := range []struct {
		field string
		list  []schedv1.Plugin
	}{{"profiles[0].plugins.multiPoint.disabled", p.MultiPoint.Disabled}, {"profiles[0].plugins.score.disabled", p.Score.Disabled}} {
		for _, pl := range set.list {
			// NodeVolumeLimits never runs: disabling it is what skiff does.
			if _, ok := known[pl.Name]; !ok && pl.Name != "*" && pl.Name != nodeVolumeLimits {
				return nil, unknownPlugin(set.field, pl.Name)
			}
		}
	}
	// Disabled first, then enabled, as kube-scheduler merges them.
	for _, pl := range p.MultiPoint.Disabled {
		if pl.Name == "*" {
			profile = nil
			continue
		}
		if i := index(pl.Name); i >= 0 {
			profile = slices.Delete(profile, i, i+1)
		}
	}
	for _, set := range []struct {
		point, field string
		list         []schedv1.Plugin
	}{{"multiPoint", "profiles[0].plugins.multiPoint.enabled", p.MultiPoint.Enabled}, {"score", "profiles[0].plugins.score.enabled", p.Score.Enabled}} {
		if set.point == "score" {
			// A plugin whose score is disabled still filters (NoScore),
			// whether the default profile or multiPoint.enabled runs it.
			for _, pl := range p.Score.Disabled {
				for i := range profile {
					if pl.Name == "*" || profile[i].Name == pl.Name {
						profile[i].NoScore = true
					}
				}
			}
		}
		for _, pl := range set.list {
			if _, ok := known[pl.Name]; !ok {
				return nil, unknownPlugin(set.field, pl.Name)
			}
			w, err := weight(set.field, pl)
			if err != nil {
				return nil, err
			}
			if i := index(pl.Name); i >= 0 {
				// score.enabled puts a disabled score back.
				if set.point == "score" {
					profile[i].NoScore = false
				}
				if w > 0 {
					profile[i].Weight = w
				}
				continue
			}
			if set.point == "score" && !slices.Contains(scoreOnly, pl.Name) {
				return nil, fmt.Errorf("%s: %s is not in the profile, and skiff would run it at all its extension points, not only Score; enable it under multiPoint", set.field, pl.Name)
			}
			profile = append(profile, fwruntime.PluginConfig{Name: pl.Name, Weight: w})
		}
	}
	return applyQueueSort(profile, p.QueueSort, known)
}

// nodeVolumeLimits is the one plugin of kube-scheduler's default profile
// that skiff has not.
const nodeVolumeLimits = "NodeVolumeLimits"

// unknownPlugin refuses a plugin name skiff's scheduler does not know.
func unknownPlugin(field, name string) error {
	if name == nodeVolumeLimits {
		return fmt.Errorf("%s: skiff's scheduler has no plugin %q: it counts a node's CSI volumes against the limits of its CSINode object, and skiff has no CSI drivers (it serves no CSINode or CSIDriver objects)", field, name)
	}
	return fmt.Errorf("%s: skiff's scheduler has no plugin %q", field, name)
}

// applyQueueSort applies the queueSort set, whose enabled list may only
// name PrioritySort, and checks that the profile keeps it: as
// kube-scheduler, a profile has exactly one queue sort plugin, and
// PrioritySort is skiff's only one. Its disabled list turns PrioritySort
// off when it names it or "*"; any other plugin it names, NodeVolumeLimits
// included, sorts no queue, so disabling it there disables nothing (as
// kube-scheduler, whose framework expands a profile's multiPoint plugins at
// the points each implements, skipping those the point disables).
func applyQueueSort(profile []fwruntime.PluginConfig, set schedv1.PluginSet, known fwruntime.Registry) ([]fwruntime.PluginConfig, error) {
	dropped := false
	for _, pl := range set.Disabled {
		switch _, ok := known[pl.Name]; {
		case pl.Name == queuesort.Name || pl.Name == "*":
			dropped = true
		case !ok && pl.Name != nodeVolumeLimits:
			// A misspelt name would otherwise disable nothing, silently.
			return nil, unknownPlugin("profiles[0].plugins.queueSort.disabled", pl.Name)
		}
	}
	for _, pl := range set.Enabled {
		switch _, ok := known[pl.Name]; {
		case pl.Name == queuesort.Name:
		case !ok:
			return nil, unknownPlugin("profiles[0].plugins.queueSort.enabled", pl.Name)
		default:
			return nil, fmt.Errorf("profiles[0].plugins.queueSort.enabled: %s is not a queue sort plugin; skiff's only one is %s", pl.Name, queuesort.Name)
		}
	}
	has := func() bool {
		return slices.ContainsFunc(profile, func(c fwruntime.PluginConfig) bool { return c.Name == queuesort.Name })
	}
	if dropped {
		profile = slices.DeleteFunc(profile, func(c fwruntime.PluginConfig) bool { return c.Name == queuesort.Name })
	}
	if len(set.Enabled) > 0 && !has() {
		profile = append(profile, fwruntime.PluginConfig{Name: queuesort.Name})
	}
	if !has() {
		return nil, fmt.Errorf("profiles[0].plugins: no queue sort plugin is enabled: skiff's scheduler orders its queue by %s (the higher priority first, then the pod queued earlier), its only queue sort plugin; enable it under multiPoint or queueSort", queuesort.Name)
	}
	return profile, nil
}

// applyPluginConfig sets the arguments of the plugins that take some.
func applyPluginConfig(profile []fwruntime.PluginConfig, cfgs []schedv1.PluginConfig) ([]fwruntime.PluginConfig, error) {
	seen := map[string]bool{}
	for n, pc := range cfgs {
		field := fmt.Sprintf("profiles[0].pluginConfig[%d]", n)
		if seen[pc.Name] {
			return nil, fmt.Errorf("%s: %s is configured twice", field, pc.Name)
		}
		seen[pc.Name] = true
		i := slices.IndexFunc(profile, func(c fwruntime.PluginConfig) bool { return c.Name == pc.Name })
		if i < 0 {
			return nil, fmt.Errorf("%s: the profile does not run %s", field, pc.Name)
		}
		var (
			args any
			err  error
		)
		switch pc.Name {
		case noderesourcesfit.Name:
			args, err = fitArgs(pc.Args)
		case volumebinding.Name:
			args, err = volumeBindingArgs(pc.Args)
		case podtopologyspread.Name:
			args, err = spreadArgs(pc.Args)
		case interpodaffinity.Name:
			args, err = interPodAffinityArgs(pc.Args)
		case defaultpreemption.Name:
			args, err = preemptionArgs(pc.Args)
		case balancedallocation.Name:
			args, err = balancedAllocationArgs(pc.Args)
		case nodeaffinity.Name:
			var a nodeaffinity.Args
			if a, err = nodeAffinityArgs(pc.Args); err == nil {
				// Refused as kube-scheduler refuses them, naming the whole path.
				if err := a.Validate(argsPath(n)); err != nil {
					return nil, err
				}
			}
			args = a
		default:
			err = fmt.Errorf("skiff's %s takes no arguments", pc.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", field, pc.Name, err)
		}
		profile[i].Args = args
	}
	return profile, nil
}

// argsPath is the path of the nth pluginConfig's args.
func argsPath(n int) *field.Path {
	return field.NewPath("profiles").Index(0).Child("pluginConfig").Index(n).Child("args")
}

// decodeArgs strictly decodes a plugin's args, which may carry their own
// apiVersion and kind (as kube-scheduler's examples write them).
func decodeArgs(raw runtime.RawExtension, into any) error {
	if len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	return yaml.UnmarshalStrict(raw.Raw, into)
}

func fitArgs(raw runtime.RawExtension) (noderesourcesfit.Args, error) {
	var a schedv1.NodeResourcesFitArgs
	var out noderesourcesfit.Args
	if err := decodeArgs(raw, &a); err != nil {
		return out, err
	}
	// Checked as kube-scheduler does: a resource is a qualified name, a group
	// a qualified name without a slash (the domain before one).
	for i, name := range a.IgnoredResources {
		if errs := metav1validation.ValidateLabelName(name, field.NewPath("ignoredResources").Index(i)); len(errs) > 0 {
			return out, errs.ToAggregate()
		}
	}
	for i, group := range a.IgnoredResourceGroups {
		p := field.NewPath("ignoredResourceGroups").Index(i)
		if strings.Contains(group, "/") {
			return out, field.Invalid(p, group, "resource group name can't contain '/'")
		}
		if errs := metav1validation.ValidateLabelName(group, p); len(errs) > 0 {
			return out, errs.ToAggregate()
		}
	}
	out.IgnoredResources, out.IgnoredResourceGroups = a.IgnoredResources, a.IgnoredResourceGroups
	out.ScoringStrategy = noderesourcesfit.LeastAllocated
	s := a.ScoringStrategy
	if s == nil {
		return out, nil
	}
	switch s.Type {
	case "", schedv1.LeastAllocated:
	case schedv1.MostAllocated:
		out.ScoringStrategy = noderesourcesfit.MostAllocated
	case schedv1.RequestedToCapacityRatio:
		out.ScoringStrategy = noderesourcesfit.RequestedToCapacityRatio
		if s.RequestedToCapacityRatio == nil {
			return out, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape: at least one point must be specified")
		}
		for _, p := range s.RequestedToCapacityRatio.Shape {
			out.Shape = append(out.Shape, noderesourcesfit.ShapePoint{Utilization: int64(p.Utilization), Score: int64(p.Score)})
		}
		if err := noderesourcesfit.ValidateShape(out.Shape); err != nil {
			return out, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape: %w", err)
		}
	default:
		return out, fmt.Errorf("scoringStrategy.type %q: skiff scores by %s (spread), %s (bin-pack) or %s", s.Type,
			schedv1.LeastAllocated, schedv1.MostAllocated, schedv1.RequestedToCapacityRatio)
	}
	if s.RequestedToCapacityRatio != nil && s.Type != schedv1.RequestedToCapacityRatio {
		return out, fmt.Errorf("scoringStrategy.requestedToCapacityRatio: only for type RequestedToCapacityRatio")
	}
	for _, r := range s.Resources {
		w := r.Weight
		if w == 0 {
			w = 1 // as kube-scheduler's default
		}
		if r.Name == "" || w < 0 || w > 100 {
			return out, fmt.Errorf("scoringStrategy.resources: %q weight %d: want a resource name and a weight of 1-100", r.Name, r.Weight)
		}
		out.Resources = append(out.Resources, noderesourcesfit.ResourceWeight{Name: v1.ResourceName(r.Name), Weight: w})
	}
	return out, nil
}

// balancedAllocationArgs reads NodeResourcesBalancedAllocationArgs: the
// resources to balance (default CPU and memory), each named once with a
// weight of 1 (0 defaults to 1), as kube-scheduler checks them.
func balancedAllocationArgs(raw runtime.RawExtension) (balancedallocation.Args, error) {
	var a schedv1.NodeResourcesBalancedAllocationArgs
	var out balancedallocation.Args
	if err := decodeArgs(raw, &a); err != nil {
		return out, err
	}
	for i, r := range a.Resources {
		p := field.NewPath("resources").Index(i)
		if r.Name == "" {
			return out, field.Required(p.Child("name"), "")
		}
		if slices.Contains(out.Resources, v1.ResourceName(r.Name)) {
			return out, field.Duplicate(p.Child("name"), r.Name)
		}
		if r.Weight != 0 && r.Weight != 1 {
			return out, field.Invalid(p.Child("weight"), r.Weight, "must be 1")
		}
		out.Resources = append(out.Resources, v1.ResourceName(r.Name))
	}
	return out, nil
}

// interPodAffinityArgs reads InterPodAffinityArgs: hardPodAffinityWeight
// (0-100, default 1) and ignorePreferredTermsOfExistingPods.
func interPodAffinityArgs(raw runtime.RawExtension) (interpodaffinity.Args, error) {
	var a schedv1.InterPodAffinityArgs
	if err := decodeArgs(raw, &a); err != nil {
		return interpodaffinity.Args{}, err
	}
	out := interpodaffinity.Args{HardPodAffinityWeight: a.HardPodAffinityWeight, IgnorePreferredTermsOfExistingPods: a.IgnorePreferredTermsOfExistingPods}
	if out.HardPodAffinityWeight == nil {
		out.HardPodAffinityWeight = ptr.To[int32](interpodaffinity.DefaultHardPodAffinityWeight)
	}
	return out, out.Validate()
}

// nodeAffinityArgs reads NodeAffinityArgs: the addedAffinity every pod of
// the profile gets (checked by the caller).
func nodeAffinityArgs(raw runtime.RawExtension) (nodeaffinity.Args, error) {
	var a schedv1.NodeAffinityArgs
	if err := decodeArgs(raw, &a); err != nil {
		return nodeaffinity.Args{}, err
	}
	return nodeaffinity.Args{AddedAffinity: a.AddedAffinity}, nil
}

// preemptionArgs reads DefaultPreemptionArgs: minCandidateNodesPercentage
// (0-100, default 10) and minCandidateNodesAbsolute (default 100), not
// both zero, as kube-scheduler defaults and checks them.
func preemptionArgs(raw runtime.RawExtension) (defaultpreemption.Args, error) {
	var a schedv1.DefaultPreemptionArgs
	if err := decodeArgs(raw, &a); err != nil {
		return defaultpreemption.Args{}, err
	}
	out := defaultpreemption.Args{MinCandidateNodesPercentage: a.MinCandidateNodesPercentage, MinCandidateNodesAbsolute: a.MinCandidateNodesAbsolute}.WithDefaults()
	return out, out.Validate()
}

// spreadArgs reads PodTopologySpreadArgs: defaultingType System (the
// default) or List with the defaultConstraints, checked as kube-scheduler does.
func spreadArgs(raw runtime.RawExtension) (podtopologyspread.Args, error) {
	var a schedv1.PodTopologySpreadArgs
	if err := decodeArgs(raw, &a); err != nil {
		return podtopologyspread.Args{}, err
	}
	out := podtopologyspread.Args{DefaultingType: podtopologyspread.DefaultingType(a.DefaultingType), DefaultConstraints: a.DefaultConstraints}
	if out.DefaultingType == "" {
		out.DefaultingType = podtopologyspread.SystemDefaulting
	}
	return out, out.Validate()
}

func volumeBindingArgs(raw runtime.RawExtension) (volumebinding.Args, error) {
	var a schedv1.VolumeBindingArgs
	var out volumebinding.Args
	if err := decodeArgs(raw, &a); err != nil {
		return out, err
	}
	if len(a.Shape) > 0 {
		return out, fmt.Errorf("shape: skiff's VolumeBinding does not score by volume capacity")
	}
	if a.BindTimeoutSeconds != nil {
		if *a.BindTimeoutSeconds <= 0 {
			return out, fmt.Errorf("bindTimeoutSeconds: must be a positive number of seconds (skiff always waits for claims to bind), got %d", *a.BindTimeoutSeconds)
		}
		out.BindTimeout = time.Duration(*a.BindTimeoutSeconds) * time.Second
	}
	return out, nil
}
