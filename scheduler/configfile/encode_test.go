package configfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	componentbase "k8s.io/component-base/config/v1alpha1"
	schedv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/skiffkube/skiff/scheduler"
	"github.com/skiffkube/skiff/scheduler/plugins"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
)

// readBack is what Parse makes of enc as /configz serves it, without the
// process settings, which the file may not hold.
func readBack(t *testing.T, enc *schedv1.KubeSchedulerConfiguration) scheduler.Config {
	t.Helper()
	data, err := json.Marshal(enc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "leaderElection") {
		t.Errorf("Parse of the whole configuration: %v, want the process settings refused", err)
	}
	stripped := *enc
	stripped.LeaderElection, stripped.ClientConnection, stripped.DebuggingConfiguration =
		componentbase.LeaderElectionConfiguration{}, componentbase.ClientConnectionConfiguration{}, componentbase.DebuggingConfiguration{}
	if data, err = json.Marshal(&stripped); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse of the encoded configuration: %v\n%s", err, data)
	}
	return cfg
}

// A file that changes every setting skiff honours reads back from its
// encoding as the same scheduler.Config, and the encoding says how the
// process runs.
func TestEncodeRoundTrips(t *testing.T) {
	cfg, err := Parse([]byte(header + `
parallelism: 8
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
profiles:
- schedulerName: bin-packer
  plugins:
    multiPoint:
      disabled: [{name: ImageLocality}]
      enabled: [{name: TaintToleration, weight: 5}]
    score:
      disabled: [{name: NodeAffinity}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 3}, {name: memory}]
      ignoredResources: [example.com/fpga]
      ignoredResourceGroups: [gpu.example.org]
  - name: VolumeBinding
    args: {bindTimeoutSeconds: 30}
  - name: InterPodAffinity
    args: {ignorePreferredTermsOfExistingPods: true}
  - name: DefaultPreemption
    args: {minCandidateNodesAbsolute: 20}
  - name: NodeResourcesBalancedAllocation
    args: {resources: [{name: cpu}, {name: memory}, {name: example.com/gpu, weight: 1}]}
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: [{maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: scheduler-profile, operator: In, values: [bin-packer]}]}]
        preferredDuringSchedulingIgnoredDuringExecution: [{weight: 2, preference: {matchExpressions: [{key: disk, operator: Exists}]}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Encode(cfg, Process{Kubeconfig: "/etc/kubernetes/scheduler.conf", QPS: 50, Burst: 100,
		LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second, Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	if back := readBack(t, enc); !reflect.DeepEqual(back, cfg) {
		t.Errorf("read back as\n%+v\nwant\n%+v", back, cfg)
	}
	le, cc := enc.LeaderElection, enc.ClientConnection
	if le.LeaderElect == nil || !*le.LeaderElect || le.LeaseDuration.Duration != 30*time.Second || le.RenewDeadline.Duration != 20*time.Second ||
		le.RetryPeriod.Duration != 4*time.Second || le.ResourceLock != "leases" || le.ResourceNamespace != "kube-system" || le.ResourceName != "kube-scheduler" {
		t.Errorf("leaderElection %+v", le)
	}
	if cc.Kubeconfig != "/etc/kubernetes/scheduler.conf" || cc.QPS != 50 || cc.Burst != 100 {
		t.Errorf("clientConnection %+v", cc)
	}
	if p := enc.EnableProfiling; p == nil || !*p {
		t.Errorf("enableProfiling %v, want true", p)
	}
}

// Left out of the file, the settings are the defaults the scheduler
// really uses, and they read back as themselves.
func TestEncodeFillsInDefaults(t *testing.T) {
	enc, err := Encode(scheduler.Config{}, Process{})
	if err != nil {
		t.Fatal(err)
	}
	if enc.APIVersion != APIVersion || enc.Kind != Kind || *enc.Parallelism != 16 || *enc.PercentageOfNodesToScore != 0 ||
		*enc.PodInitialBackoffSeconds != 1 || *enc.PodMaxBackoffSeconds != 10 {
		t.Errorf("%s %s parallelism %d, percentageOfNodesToScore %d, backoff %ds to %ds", enc.APIVersion, enc.Kind, *enc.Parallelism,
			*enc.PercentageOfNodesToScore, *enc.PodInitialBackoffSeconds, *enc.PodMaxBackoffSeconds)
	}
	if p := enc.EnableProfiling; p == nil || *p {
		t.Errorf("enableProfiling %v, want false", p)
	}
	prof := enc.Profiles[0]
	if len(enc.Profiles) != 1 || *prof.SchedulerName != "default-scheduler" {
		t.Fatalf("profiles %+v", enc.Profiles)
	}
	var got, want []string
	for _, pl := range prof.Plugins.MultiPoint.Enabled {
		w := int32(0)
		if pl.Weight != nil {
			w = *pl.Weight
		}
		got = append(got, fmt.Sprintf("%s=%d", pl.Name, w))
	}
	for _, pc := range plugins.DefaultProfile(noderesourcesfit.LeastAllocated) {
		want = append(want, fmt.Sprintf("%s=%d", pc.Name, pc.Weight))
	}
	if !slices.Equal(got, want) || len(prof.Plugins.Score.Disabled) != 0 {
		t.Errorf("multiPoint.enabled %v, want %v; score.disabled %v", got, want, prof.Plugins.Score.Disabled)
	}
	args := map[string]string{}
	for _, pc := range prof.PluginConfig {
		args[pc.Name] = string(pc.Args.Raw)
	}
	if !reflect.DeepEqual(args, map[string]string{
		"NodeResourcesFit": `{"kind":"NodeResourcesFitArgs","apiVersion":"kubescheduler.config.k8s.io/v1","scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1}]}}`,
		"VolumeBinding":    `{"kind":"VolumeBindingArgs","apiVersion":"kubescheduler.config.k8s.io/v1","bindTimeoutSeconds":600}`,
	}) {
		t.Errorf("pluginConfig %v", args)
	}
	again, err := Encode(readBack(t, enc), Process{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, enc) {
		t.Errorf("the defaults read back differ:\n%+v\nwant\n%+v", again, enc)
	}
}
