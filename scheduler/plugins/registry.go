package plugins

import (
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/plugins/balancedallocation"
	"github.com/skiffkube/skiff/scheduler/plugins/defaultbinder"
	"github.com/skiffkube/skiff/scheduler/plugins/defaultpreemption"
	"github.com/skiffkube/skiff/scheduler/plugins/imagelocality"
	"github.com/skiffkube/skiff/scheduler/plugins/interpodaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeaffinity"
	"github.com/skiffkube/skiff/scheduler/plugins/nodename"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeports"
	"github.com/skiffkube/skiff/scheduler/plugins/noderesourcesfit"
	"github.com/skiffkube/skiff/scheduler/plugins/nodeunschedulable"
	"github.com/skiffkube/skiff/scheduler/plugins/podtopologyspread"
	"github.com/skiffkube/skiff/scheduler/plugins/queuesort"
	"github.com/skiffkube/skiff/scheduler/plugins/schedulinggates"
	"github.com/skiffkube/skiff/scheduler/plugins/tainttoleration"
	"github.com/skiffkube/skiff/scheduler/plugins/volumebinding"
	"github.com/skiffkube/skiff/scheduler/plugins/volumerestrictions"
	"github.com/skiffkube/skiff/scheduler/plugins/volumezone"
)

// Registry returns a fresh map of every in-tree plugin's constructor.
func Registry() runtime.Registry {
	return runtime.Registry{
		schedulinggates.Name:    schedulinggates.New,
		queuesort.Name:          queuesort.New,
		nodeunschedulable.Name:  nodeunschedulable.New,
		nodename.Name:           nodename.New,
		tainttoleration.Name:    tainttoleration.New,
		nodeaffinity.Name:       nodeaffinity.New,
		nodeports.Name:          nodeports.New,
		noderesourcesfit.Name:   noderesourcesfit.New,
		volumerestrictions.Name: volumerestrictions.New,
		volumebinding.Name:      volumebinding.New,
		volumezone.Name:         volumezone.New,
		podtopologyspread.Name:  podtopologyspread.New,
		interpodaffinity.Name:   interpodaffinity.New,
		balancedallocation.Name: balancedallocation.New,
		imagelocality.Name:      imagelocality.New,
		defaultpreemption.Name:  defaultpreemption.New,
		defaultbinder.Name:      defaultbinder.New,
	}
}

// DefaultProfile is the default-scheduler's plugin list, kube-scheduler
// v1.33's but NodeVolumeLimits (skiff serves no CSINode objects for it to
// count against). PrioritySort orders the queue. Filters run in this
// order and stop at the first rejection, so the cheap, decisive checks come
// first; score weights are kube-scheduler's defaults. strategy selects
// NodeResourcesFit's scoring ("" = LeastAllocated).
func DefaultProfile(strategy noderesourcesfit.ScoringStrategy) []runtime.PluginConfig {
	return []runtime.PluginConfig{
		{Name: schedulinggates.Name},
		{Name: queuesort.Name},
		{Name: nodeunschedulable.Name},
		{Name: nodename.Name},
		{Name: tainttoleration.Name, Weight: 3},
		{Name: nodeaffinity.Name, Weight: 2},
		{Name: nodeports.Name},
		{Name: noderesourcesfit.Name, Weight: 1, Args: noderesourcesfit.Args{ScoringStrategy: strategy}},
		{Name: volumerestrictions.Name},
		{Name: volumebinding.Name},
		{Name: volumezone.Name},
		{Name: podtopologyspread.Name, Weight: 2},
		{Name: interpodaffinity.Name, Weight: 2},
		{Name: balancedallocation.Name, Weight: 1},
		{Name: imagelocality.Name, Weight: 1},
		{Name: defaultpreemption.Name},
		{Name: defaultbinder.Name},
	}
}
