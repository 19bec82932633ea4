package tainttoleration

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestTaintTolerationFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want string
	}{
		{"an untainted node takes any pod", schedtest.MakePod().Obj(), schedtest.MakeNode().Obj(), ""},
		{"an untolerated NoSchedule taint rules the node out, naming the taint",
			schedtest.MakePod().Obj(), schedtest.MakeNode().Taint("dedicated", "db", v1.TaintEffectNoSchedule).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: db}"},
		{"an untolerated NoExecute taint rules the node out",
			schedtest.MakePod().Obj(), schedtest.MakeNode().Taint(v1.TaintNodeUnreachable, "", v1.TaintEffectNoExecute).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {node.kubernetes.io/unreachable: }"},
		{"a matching Equal toleration admits the pod",
			schedtest.MakePod().Toleration("dedicated", v1.TolerationOpEqual, "db", v1.TaintEffectNoSchedule).Obj(),
			schedtest.MakeNode().Taint("dedicated", "db", v1.TaintEffectNoSchedule).Obj(), ""},
		{"a toleration with another value does not",
			schedtest.MakePod().Toleration("dedicated", v1.TolerationOpEqual, "web", v1.TaintEffectNoSchedule).Obj(),
			schedtest.MakeNode().Taint("dedicated", "db", v1.TaintEffectNoSchedule).Obj(),
			"UnschedulableAndUnresolvable: node(s) had untolerated taint {dedicated: db}"},
		{"an Exists toleration without effect admits any effect",
			schedtest.MakePod().Toleration("dedicated", v1.TolerationOpExists, "", "").Obj(),
			schedtest.MakeNode().Taint("dedicated", "db", v1.TaintEffectNoExecute).Obj(), ""},
		{"a PreferNoSchedule taint never filters",
			schedtest.MakePod().Obj(), schedtest.MakeNode().Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, schedtest.NodeInfo(tc.node))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTaintTolerationScorePrefersFewerUntoleratedSoftTaints(t *testing.T) {
	clean := schedtest.NodeInfo(schedtest.MakeNode().Name("clean").Obj())
	one := schedtest.NodeInfo(schedtest.MakeNode().Name("one").Taint("a", "", v1.TaintEffectPreferNoSchedule).Obj())
	two := schedtest.NodeInfo(schedtest.MakeNode().Name("two").Taint("a", "", v1.TaintEffectPreferNoSchedule).Taint("b", "", v1.TaintEffectPreferNoSchedule).Obj())
	p, _ := New(nil, nil)

	got := schedtest.RunScore(t, p, schedtest.MakePod().Obj(), clean, one, two)
	if got["clean"] != 100 || got["one"] != 50 || got["two"] != 0 {
		t.Fatalf("scores = %v, want clean:100 one:50 two:0", got)
	}
	tolerant := schedtest.MakePod().Toleration("a", v1.TolerationOpExists, "", v1.TaintEffectPreferNoSchedule).Obj()
	got = schedtest.RunScore(t, p, tolerant, clean, one, two)
	if got["clean"] != 100 || got["one"] != 100 || got["two"] != 0 {
		t.Fatalf("scores with toleration = %v, want clean:100 one:100 two:0", got)
	}
}
