package configfile

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	fwruntime "github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/defaultpreemption"
	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/plugins/volumebinding"
)

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func pluginNamed(t *testing.T, profile []fwruntime.PluginConfig, name string) (fwruntime.PluginConfig, bool) {
	t.Helper()
	i := slices.IndexFunc(profile, func(c fwruntime.PluginConfig) bool { return c.Name == name })
	if i < 0 {
		return fwruntime.PluginConfig{}, false
	}
	return profile[i], true
}

func names(profile []fwruntime.PluginConfig) []string {
	var out []string
	for _, c := range profile {
		out = append(out, c.Name)
	}
	return out
}

// The bin-packing configuration of Kubernetes' documentation, with the
// process-wide numbers, becomes the scheduler.Config it describes.
func TestParseBinPacking(t *testing.T) {
	cfg, err := Parse([]byte(header + `
parallelism: 8
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
leaderElection:
  leaderElect: true
profiles:
- schedulerName: bin-packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 3
        - name: memory
      ignoredResources: [example.com/fpga]
      ignoredResourceGroups: [gpu.example.org]
  - name: VolumeBinding
    args:
      bindTimeoutSeconds: 30
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Parallelism != 8 || cfg.PercentageOfNodesToScore != 30 || cfg.PodInitialBackoff != 2*time.Second || cfg.PodMaxBackoff != 20*time.Second {
		t.Errorf("numbers: %+v", cfg)
	}
	if cfg.SchedulerName != "bin-packer" || cfg.ScoringStrategy != string(noderesourcesfit.MostAllocated) {
		t.Errorf("scheduler name %q, scoring strategy %q", cfg.SchedulerName, cfg.ScoringStrategy)
	}
	fit, _ := pluginNamed(t, cfg.Plugins, noderesourcesfit.Name)
	want := noderesourcesfit.Args{ScoringStrategy: noderesourcesfit.MostAllocated,
		Resources: []noderesourcesfit.ResourceWeight{{Name: "cpu", Weight: 3}, {Name: "memory", Weight: 1}}}
	if got, ok := fit.Args.(noderesourcesfit.Args); !ok || got.ScoringStrategy != want.ScoringStrategy || !slices.Equal(got.Resources, want.Resources) ||
		!slices.Equal(got.IgnoredResources, []string{"example.com/fpga"}) || !slices.Equal(got.IgnoredResourceGroups, []string{"gpu.example.org"}) {
		t.Errorf("NodeResourcesFit args %#v, want %#v", fit.Args, want)
	}
	vb, _ := pluginNamed(t, cfg.Plugins, volumebinding.Name)
	if got, ok := vb.Args.(volumebinding.Args); !ok || got.BindTimeout != 30*time.Second {
		t.Errorf("VolumeBinding args %#v", vb.Args)
	}
	// Everything else is the default profile.
	if got, want := names(cfg.Plugins), names(plugins.DefaultProfile(noderesourcesfit.LeastAllocated)); !slices.Equal(got, want) {
		t.Errorf("plugins %v, want %v", got, want)
	}
}

// PodTopologySpreadArgs, as kube-scheduler's documentation configures
// cluster-level default constraints.
// RequestedToCapacityRatio, as kube-scheduler's documentation configures
// bin packing of an extended resource.
func TestParseRequestedToCapacityRatio(t *testing.T) {
	cfg, err := Parse([]byte(header + `
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: intel.com/foo, weight: 3}, {name: cpu}]
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
`))
	if err != nil {
		t.Fatal(err)
	}
	fit, _ := pluginNamed(t, cfg.Plugins, noderesourcesfit.Name)
	got, _ := fit.Args.(noderesourcesfit.Args)
	if got.ScoringStrategy != noderesourcesfit.RequestedToCapacityRatio || cfg.ScoringStrategy != string(got.ScoringStrategy) ||
		!slices.Equal(got.Shape, []noderesourcesfit.ShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}}) ||
		!slices.Equal(got.Resources, []noderesourcesfit.ResourceWeight{{Name: "intel.com/foo", Weight: 3}, {Name: "cpu", Weight: 1}}) {
		t.Errorf("NodeResourcesFit args %#v, config strategy %q", fit.Args, cfg.ScoringStrategy)
	}
	if _, err := noderesourcesfit.New(fit.Args, nil); err != nil {
		t.Errorf("the plugin refuses the args: %v", err)
	}
	enc, err := Encode(cfg, Process{})
	if err != nil {
		t.Fatal(err)
	}
	back, _ := pluginNamed(t, readBack(t, enc).Plugins, noderesourcesfit.Name)
	if !reflect.DeepEqual(back.Args, fit.Args) {
		t.Errorf("NodeResourcesFit args read back as %#v, want %#v", back.Args, fit.Args)
	}
}

func TestParseSpreadDefaults(t *testing.T) {
	cfg, err := Parse([]byte(header + `
profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
      defaultingType: List
`))
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := pluginNamed(t, cfg.Plugins, podtopologyspread.Name)
	want := podtopologyspread.Args{DefaultingType: podtopologyspread.ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway}}}
	if !reflect.DeepEqual(pc.Args, want) || pc.Weight != 2 {
		t.Errorf("PodTopologySpread %#v, want args %#v and weight 2", pc, want)
	}
	if cfg, err = Parse([]byte(header + "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: List}}]}]\n")); err != nil {
		t.Fatal(err)
	}
	if pc, _ := pluginNamed(t, cfg.Plugins, podtopologyspread.Name); !reflect.DeepEqual(pc.Args, podtopologyspread.Args{DefaultingType: podtopologyspread.ListDefaulting}) {
		t.Errorf("no default constraints: %#v", pc.Args)
	}
}

// InterPodAffinityArgs: the weight defaults to kube-scheduler's 1.
func TestParseInterPodAffinityArgs(t *testing.T) {
	for file, want := range map[string]interpodaffinity.Args{
		"args: {hardPodAffinityWeight: 0}":                                             {HardPodAffinityWeight: ptr.To[int32](0)},
		"args: {ignorePreferredTermsOfExistingPods: true}":                             {HardPodAffinityWeight: ptr.To[int32](1), IgnorePreferredTermsOfExistingPods: true},
		"args: {hardPodAffinityWeight: 50, ignorePreferredTermsOfExistingPods: false}": {HardPodAffinityWeight: ptr.To[int32](50)},
	} {
		cfg, err := Parse([]byte(header + "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    " + file + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if pc, _ := pluginNamed(t, cfg.Plugins, interpodaffinity.Name); !reflect.DeepEqual(pc.Args, want) {
			t.Errorf("%s: args %#v, want %#v", file, pc.Args, want)
		}
	}
}

// DefaultPreemptionArgs: each field left out takes kube-scheduler's
// default (10%, 100 nodes); a zero given stays zero.
func TestParseDefaultPreemptionArgs(t *testing.T) {
	for file, want := range map[string]defaultpreemption.Args{
		"args: {}": {MinCandidateNodesPercentage: ptr.To[int32](10), MinCandidateNodesAbsolute: ptr.To[int32](100)},
		"args: {apiVersion: kubescheduler.config.k8s.io/v1, kind: DefaultPreemptionArgs, minCandidateNodesPercentage: 0}": {
			MinCandidateNodesPercentage: ptr.To[int32](0), MinCandidateNodesAbsolute: ptr.To[int32](100)},
		"args: {minCandidateNodesPercentage: 20, minCandidateNodesAbsolute: 0}": {MinCandidateNodesPercentage: ptr.To[int32](20), MinCandidateNodesAbsolute: ptr.To[int32](0)},
	} {
		cfg, err := Parse([]byte(header + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    " + file + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if pc, _ := pluginNamed(t, cfg.Plugins, defaultpreemption.Name); !reflect.DeepEqual(pc.Args, want) {
			t.Errorf("%s: args %#v, want %#v", file, pc.Args, want)
		}
	}
}

// NodeAffinityArgs: the profile's addedAffinity, in kube-scheduler's
// format, reaches the plugin as it is.
func TestParseNodeAffinityArgs(t *testing.T) {
	cfg, err := Parse([]byte(header + `
profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeAffinityArgs
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: scheduler-profile, operator: In, values: [foo]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 5
          preference:
            matchFields: [{key: metadata.name, operator: In, values: [n1]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := nodeaffinity.Args{AddedAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "scheduler-profile", Operator: v1.NodeSelectorOpIn, Values: []string{"foo"}}}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 5, Preference: v1.NodeSelectorTerm{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}}},
	}}
	if pc, _ := pluginNamed(t, cfg.Plugins, nodeaffinity.Name); !reflect.DeepEqual(pc.Args, want) || pc.Weight != 2 {
		t.Errorf("NodeAffinity %#v, want args %#v and weight 2", pc, want)
	}
	if cfg, err = Parse([]byte(header + "profiles: [{pluginConfig: [{name: NodeAffinity, args: {}}]}]\n")); err != nil {
		t.Fatal(err)
	}
	if pc, _ := pluginNamed(t, cfg.Plugins, nodeaffinity.Name); !reflect.DeepEqual(pc.Args, nodeaffinity.Args{}) {
		t.Errorf("no added affinity: %#v", pc.Args)
	}
}

// Added terms that do not parse are refused as kube-scheduler's
// ValidateNodeAffinityArgs refuses them, naming the whole path.
func TestParseRefusesNodeAffinityArgs(t *testing.T) {
	const badKey = `Invalid value: "invalid/label/key": a valid label key must consist of alphanumeric characters, '-', '_' or '.', ` +
		`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is ` +
		`'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`
	for _, tc := range []struct {
		name, args, want string
	}{
		{"a bad label key", "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: invalid/label/key, operator: In, values: [a]}]}]}}}",
			"profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: " + badKey},
		{"both kinds of terms bad",
			"{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: invalid/label/key, operator: In, values: [a]}]}]}, " +
				"preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchFields: [{key: metadata.name, operator: In, values: [n1, n2]}]}}]}}",
			"[profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: " + badKey +
				`, profiles[0].pluginConfig[1].args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].values: Invalid value: ["n1","n2"]: must have one element]`},
		{"an operator", "{addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Near, values: [a]}]}]}}}",
			`profiles[0].pluginConfig[1].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: ` +
				`Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"`},
		{"an unknown field", "{addedAfinity: {}}",
			`profiles[0].pluginConfig[1] (NodeAffinity): error unmarshaling JSON: while decoding JSON: json: unknown field "addedAfinity"`},
		{"an unknown field of the affinity", "{addedAffinity: {requiredDuringSchedulingRequiredDuringExecution: {}}}",
			`profiles[0].pluginConfig[1] (NodeAffinity): error unmarshaling JSON: while decoding JSON: json: unknown field "requiredDuringSchedulingRequiredDuringExecution"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {}}, {name: NodeAffinity, args: " + tc.args + "}]}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant    %s", err, tc.want)
			}
		})
	}
}

// A file without profiles leaves the profile to the scheduler's default.
func TestParseWithoutProfiles(t *testing.T) {
	cfg, err := Parse([]byte(header + "percentageOfNodesToScore: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PercentageOfNodesToScore != 100 || cfg.Plugins != nil || cfg.SchedulerName != "" {
		t.Errorf("%+v", cfg)
	}
}

// Plugins enabled, disabled and weighted under multiPoint and score.
func TestParsePlugins(t *testing.T) {
	cfg, err := Parse([]byte(header + `
profiles:
- percentageOfNodesToScore: 50
  plugins:
    multiPoint:
      disabled:
      - name: ImageLocality
      - name: InterPodAffinity
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: TaintToleration
        weight: 7
      - name: NodeResourcesFit
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PercentageOfNodesToScore != 50 {
		t.Errorf("the profile's percentageOfNodesToScore: %d", cfg.PercentageOfNodesToScore)
	}
	got := names(cfg.Plugins)
	for _, gone := range []string{"ImageLocality", "InterPodAffinity"} {
		if slices.Contains(got, gone) {
			t.Errorf("%s still runs: %v", gone, got)
		}
	}
	if ba, _ := pluginNamed(t, cfg.Plugins, "NodeResourcesBalancedAllocation"); !ba.NoScore {
		t.Errorf("NodeResourcesBalancedAllocation still scores: %+v", ba)
	}
	if tt, _ := pluginNamed(t, cfg.Plugins, "TaintToleration"); tt.Weight != 7 {
		t.Errorf("TaintToleration weight %d, want 7", tt.Weight)
	}
	if fit, _ := pluginNamed(t, cfg.Plugins, "NodeResourcesFit"); fit.Weight != 1 {
		t.Errorf("NodeResourcesFit weight %d, want its default 1", fit.Weight)
	}

	// "*" and then the ones wanted, under multiPoint.
	cfg, err = Parse([]byte(header + `
profiles:
- plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit, weight: 2}, {name: DefaultBinder}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cfg.Plugins); !slices.Equal(got, []string{"PrioritySort", "NodeResourcesFit", "DefaultBinder"}) {
		t.Errorf("plugins %v", got)
	}
	if cfg.Plugins[1].Weight != 2 {
		t.Errorf("NodeResourcesFit weight %d", cfg.Plugins[1].Weight)
	}

	// Every score off, then one on again: the others still filter.
	cfg, err = Parse([]byte(header + `
profiles:
- plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit, weight: 1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(cfg.Plugins), names(plugins.DefaultProfile(noderesourcesfit.LeastAllocated)); !slices.Equal(got, want) {
		t.Errorf("plugins %v, want all of %v", got, want)
	}
	for _, pc := range cfg.Plugins {
		if pc.NoScore != (pc.Name != "NodeResourcesFit") {
			t.Errorf("%s: NoScore %v", pc.Name, pc.NoScore)
		}
	}

	// A point's own set overrides multiPoint: enabled there, but no score.
	cfg, err = Parse([]byte(header + `
profiles:
- plugins:
    multiPoint:
      enabled: [{name: TaintToleration, weight: 5}]
    score:
      disabled: [{name: TaintToleration}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if tt, ok := pluginNamed(t, cfg.Plugins, "TaintToleration"); !ok || !tt.NoScore {
		t.Errorf("TaintToleration %+v, want it run without its score", tt)
	}

	// So it does for a plugin only multiPoint.enabled runs.
	cfg, err = Parse([]byte(header + `
profiles:
- plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: TaintToleration, weight: 5}, {name: ImageLocality}, {name: DefaultBinder}]
    score:
      disabled: [{name: TaintToleration}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(cfg.Plugins); !slices.Equal(got, []string{"PrioritySort", "TaintToleration", "ImageLocality", "DefaultBinder"}) {
		t.Errorf("plugins %v", got)
	}
	if tt, _ := pluginNamed(t, cfg.Plugins, "TaintToleration"); !tt.NoScore || tt.Weight != 5 {
		t.Errorf("TaintToleration %+v, want it run with weight 5 and without its score", tt)
	}
	if il, _ := pluginNamed(t, cfg.Plugins, "ImageLocality"); il.NoScore {
		t.Errorf("ImageLocality %+v, want it scored", il)
	}
}

// upstreamDefaultPlugins is v1.33's default profile as kube-scheduler
// writes its configuration (pkg/scheduler/apis/config/v1/default_plugins.go).
const upstreamDefaultPlugins = `
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: SchedulingGates
      - name: PrioritySort
      - name: NodeUnschedulable
      - name: NodeName
      - {name: TaintToleration, weight: 3}
      - {name: NodeAffinity, weight: 2}
      - name: NodePorts
      - {name: NodeResourcesFit, weight: 1}
      - name: VolumeRestrictions
      - name: NodeVolumeLimits
      - name: VolumeBinding
      - name: VolumeZone
      - {name: PodTopologySpread, weight: 2}
      - {name: InterPodAffinity, weight: 2}
      - name: DefaultPreemption
      - {name: NodeResourcesBalancedAllocation, weight: 1}
      - {name: ImageLocality, weight: 1}
      - name: DefaultBinder
`

// kube-scheduler's default profile is skiff's but NodeVolumeLimits, which
// is refused with the reason, and may be disabled (it never runs).
func TestParseUpstreamDefaultProfile(t *testing.T) {
	_, err := Parse([]byte(header + upstreamDefaultPlugins))
	if err == nil || !strings.Contains(err.Error(), `no plugin "NodeVolumeLimits": it counts a node's CSI volumes`) {
		t.Fatalf("err = %v, want NodeVolumeLimits refused with the reason", err)
	}
	withoutLimits := strings.Replace(upstreamDefaultPlugins, "      - name: NodeVolumeLimits\n", "", 1)
	cfg, err := Parse([]byte(header + withoutLimits + "      disabled: [{name: NodeVolumeLimits}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	def := plugins.DefaultProfile(noderesourcesfit.LeastAllocated)
	if got, want := names(cfg.Plugins), names(def); !slices.Equal(got, want) {
		t.Errorf("plugins %v, want %v", got, want)
	}
	for i, pc := range cfg.Plugins {
		if pc.Weight != def[i].Weight {
			t.Errorf("%s weight %d, want %d", pc.Name, pc.Weight, def[i].Weight)
		}
	}
}

// PrioritySort may be named at queueSort, the one point besides multiPoint
// and score that skiff reads, as long as the profile keeps it.
func TestParseQueueSort(t *testing.T) {
	for _, plugins := range []string{
		"{queueSort: {enabled: [{name: PrioritySort}]}}",
		"{queueSort: {disabled: [{name: \"*\"}], enabled: [{name: PrioritySort}]}}",
		"{multiPoint: {disabled: [{name: PrioritySort}]}, queueSort: {enabled: [{name: PrioritySort}]}}",
		"{multiPoint: {disabled: [{name: \"*\"}], enabled: [{name: DefaultBinder}]}, queueSort: {enabled: [{name: PrioritySort}]}}",
	} {
		cfg, err := Parse([]byte(header + "profiles: [{plugins: " + plugins + "}]\n"))
		if err != nil {
			t.Errorf("%s: %v", plugins, err)
			continue
		}
		if n := slices.IndexFunc(cfg.Plugins, func(c fwruntime.PluginConfig) bool { return c.Name == "PrioritySort" }); n < 0 {
			t.Errorf("%s: no PrioritySort in %v", plugins, names(cfg.Plugins))
		}
		if n := len(slices.DeleteFunc(names(cfg.Plugins), func(n string) bool { return n != "PrioritySort" })); n != 1 {
			t.Errorf("%s: PrioritySort %d times in %v", plugins, n, names(cfg.Plugins))
		}
	}
}

// Disabling at queueSort a plugin that sorts no queue (NodeVolumeLimits,
// which skiff lacks, included) disables nothing, as in kube-scheduler, whose
// framework expands a multiPoint plugin only at the points it implements: the
// profile stays the default one.
func TestParseQueueSortDisablingAnotherPluginIsANoOp(t *testing.T) {
	for _, name := range []string{"NodeVolumeLimits", "NodeResourcesFit", "DefaultPreemption"} {
		cfg, err := Parse([]byte(header + "profiles: [{plugins: {queueSort: {disabled: [{name: " + name + "}]}}}]\n"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got, want := names(cfg.Plugins), names(plugins.DefaultProfile(noderesourcesfit.LeastAllocated)); !slices.Equal(got, want) {
			t.Errorf("%s: plugins %v, want the default %v", name, got, want)
		}
	}
}

// What skiff's scheduler cannot honour is refused, naming the field.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not YAML", "profiles: [", "not a KubeSchedulerConfiguration"},
		{"unknown field", header + "percentageOfNodesToScor: 5\n", `unknown field "percentageOfNodesToScor"`},
		{"wrong kind", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", `want apiVersion kubescheduler.config.k8s.io/v1`},
		{"percentage", header + "percentageOfNodesToScore: 120\n", "percentageOfNodesToScore: must be 0 (adaptive) to 100, got 120"},
		{"parallelism", header + "parallelism: 0\n", "parallelism: must be positive"},
		{"backoff", header + "podInitialBackoffSeconds: 10\npodMaxBackoffSeconds: 5\n", "podMaxBackoffSeconds: must not be less than podInitialBackoffSeconds"},
		{"zero backoff", header + "podMaxBackoffSeconds: 0\n", "podMaxBackoffSeconds: must be a positive number of seconds"},
		{"two profiles", header + "profiles: [{schedulerName: a}, {schedulerName: b}]\n", "profiles: skiff runs one scheduler profile, the file has 2"},
		{"no leader election", header + "leaderElection: {leaderElect: false}\n", "leaderElection.leaderElect: skiff's scheduler always elects"},
		{"leader election timing", header + "leaderElection: {leaseDuration: 30s}\n", "leaderElection: set the timing with --leader-elect-lease-duration"},
		{"client connection", header + "clientConnection: {kubeconfig: /etc/kubernetes/scheduler.conf}\n", "clientConnection: set the connection with --kubeconfig"},
		{"profiling", header + "enableProfiling: false\n", "use --profiling"},
		{"extenders", header + "extenders: [{urlPrefix: http://127.0.0.1:8888}]\n", "extenders: skiff's scheduler does not call scheduler extenders"},
		{"filter point", header + "profiles: [{plugins: {filter: {disabled: [{name: NodePorts}]}}}]\n", "profiles[0].plugins.filter: skiff runs each plugin at all its extension points"},
		{"bad weight", header + "profiles: [{plugins: {score: {enabled: [{name: NodePorts, weight: -1}]}}}]\n", "weight of NodePorts must be 1-100, got -1"},
		{"only the score of a filter plugin not run", header + "profiles: [{plugins: {multiPoint: {disabled: [{name: NodeResourcesFit}]}, score: {enabled: [{name: NodeResourcesFit}]}}}]\n",
			"profiles[0].plugins.score.enabled: NodeResourcesFit is not in the profile, and skiff would run it at all its extension points, not only Score"},
		{"the queue sort disabled", header + "profiles: [{plugins: {multiPoint: {disabled: [{name: PrioritySort}]}}}]\n",
			"profiles[0].plugins: no queue sort plugin is enabled: skiff's scheduler orders its queue by PrioritySort (the higher priority first, then the pod queued earlier), its only queue sort plugin"},
		{"every plugin disabled, the queue sort not enabled again", header + "profiles: [{plugins: {multiPoint: {disabled: [{name: \"*\"}], enabled: [{name: DefaultBinder}]}}}]\n",
			"profiles[0].plugins: no queue sort plugin is enabled"},
		{"the queue sort disabled at its point", header + "profiles: [{plugins: {queueSort: {disabled: [{name: PrioritySort}]}}}]\n",
			"profiles[0].plugins: no queue sort plugin is enabled"},
		{"another plugin as the queue sort", header + "profiles: [{plugins: {queueSort: {enabled: [{name: NodeName}]}}}]\n",
			"profiles[0].plugins.queueSort.enabled: NodeName is not a queue sort plugin; skiff's only one is PrioritySort"},
		{"an unknown queue sort", header + "profiles: [{plugins: {queueSort: {enabled: [{name: FifoSort}]}}}]\n",
			`profiles[0].plugins.queueSort.enabled: skiff's scheduler has no plugin "FifoSort"`},
		{"an unknown plugin disabled at queueSort", header + "profiles: [{plugins: {queueSort: {disabled: [{name: PrioritySrot}]}}}]\n",
			`profiles[0].plugins.queueSort.disabled: skiff's scheduler has no plugin "PrioritySrot"`},
		{"NodeVolumeLimits", header + "profiles: [{plugins: {multiPoint: {enabled: [{name: NodeVolumeLimits}]}}}]\n",
			`profiles[0].plugins.multiPoint.enabled: skiff's scheduler has no plugin "NodeVolumeLimits": it counts a node's CSI volumes against the limits of its CSINode object, and skiff has no CSI drivers (it serves no CSINode or CSIDriver objects)`},
		{"unknown plugin", header + "profiles: [{plugins: {multiPoint: {enabled: [{name: NodeResourcesFitt}]}}}]\n", `skiff's scheduler has no plugin "NodeResourcesFitt"`},
		{"unknown plugin disabled", header + "profiles: [{plugins: {multiPoint: {disabled: [{name: ImageLocalty}]}}}]\n", `profiles[0].plugins.multiPoint.disabled: skiff's scheduler has no plugin "ImageLocalty"`},
		{"weight", header + "profiles: [{plugins: {score: {enabled: [{name: ImageLocality, weight: 500}]}}}]\n", "weight of ImageLocality must be 1-100, got 500"},
		{"scoring type", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Random}}}]}]\n",
			`profiles[0].pluginConfig[0] (NodeResourcesFit): scoringStrategy.type "Random": skiff scores by LeastAllocated (spread), MostAllocated (bin-pack) or RequestedToCapacityRatio`},
		{"ratio without a shape", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: RequestedToCapacityRatio}}}]}]\n",
			"scoringStrategy.requestedToCapacityRatio.shape: at least one point must be specified"},
		{"ratio shape out of order", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}, {utilization: 10, score: 2}]}}}}]}]\n",
			"scoringStrategy.requestedToCapacityRatio.shape: [1].utilization: values must be sorted in increasing order"},
		{"ratio shape score", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: {shape: [{utilization: 50, score: 11}]}}}}]}]\n",
			"[0].score: 11 not in valid range [0, 10]"},
		{"a shape for another type", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, requestedToCapacityRatio: {shape: [{utilization: 50, score: 1}]}}}}]}]\n",
			"scoringStrategy.requestedToCapacityRatio: only for type RequestedToCapacityRatio"},
		{"unknown arg", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategi: {}}}]}]\n", `unknown field "scoringStrategi"`},
		{"ignored resource", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {ignoredResources: [example.com/]}}]}]\n", "ignoredResources[0]: Invalid value"},
		{"ignored resource group", header + "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {ignoredResourceGroups: [example.com/foo]}}]}]\n",
			"ignoredResourceGroups[0]: Invalid value: \"example.com/foo\": resource group name can't contain '/'"},
		{"balanced allocation weight", header + "profiles: [{pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resources: [{name: cpu, weight: 2}]}}]}]\n",
			"(NodeResourcesBalancedAllocation): resources[0].weight: Invalid value: 2: must be 1"},
		{"balanced allocation twice", header + "profiles: [{pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resources: [{name: cpu}, {name: cpu}]}}]}]\n",
			`resources[1].name: Duplicate value: "cpu"`},
		{"args of a plugin without", header + "profiles: [{pluginConfig: [{name: TaintToleration, args: {hardPodAffinityWeight: 2}}]}]\n", "skiff's TaintToleration takes no arguments"},
		{"hard pod affinity weight", header + "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}]}]\n",
			"profiles[0].pluginConfig[0] (InterPodAffinity): hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"},
		{"candidate percentage", header + "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 150}}]}]\n",
			"profiles[0].pluginConfig[0] (DefaultPreemption): minCandidateNodesPercentage: Invalid value: 150: not in valid range [0, 100]"},
		{"candidate number", header + "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesAbsolute: -1}}]}]\n",
			"profiles[0].pluginConfig[0] (DefaultPreemption): minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"},
		{"no candidates", header + "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}}]}]\n",
			"minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"},
		{"unknown preemption arg", header + "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodes: 5}}]}]\n", `unknown field "minCandidateNodes"`},
		{"args of a plugin not run", header + "profiles: [{plugins: {multiPoint: {disabled: [{name: VolumeBinding}]}}, pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: 5}}]}]\n",
			"profiles[0].pluginConfig[0]: the profile does not run VolumeBinding"},
		{"spread defaults without List", header + "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}}]}]\n",
			`profiles[0].pluginConfig[0] (PodTopologySpread): defaultingType: Invalid value: "System": when .defaultConstraints are not empty`},
		{"spread default with a selector", header + "profiles: [{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: List, defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}]}}]}]\n",
			"defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector"},
		{"bind timeout", header + "profiles: [{pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: 0}}]}]\n", "bindTimeoutSeconds: must be a positive number of seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
	good := filepath.Join(t.TempDir(), "sched.yaml")
	if err := os.WriteFile(good, []byte(header+"parallelism: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := Load(good); err != nil || cfg.Parallelism != 4 {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
}

// The README's example is a file this package reads as bin-packing.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Scheduling\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	example, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no yaml block under ### Scheduling")
	}
	cfg, err := Parse([]byte(example))
	if err != nil {
		t.Fatalf("README's example: %v", err)
	}
	if cfg.ScoringStrategy != string(noderesourcesfit.MostAllocated) {
		t.Errorf("README's example scores by %q", cfg.ScoringStrategy)
	}
}
