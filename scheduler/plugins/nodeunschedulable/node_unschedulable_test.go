package nodeunschedulable

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestNodeUnschedulableFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		node *v1.Node
		want string
	}{
		{"a schedulable node takes any pod", schedtest.MakePod().Obj(), schedtest.MakeNode().Obj(), ""},
		{"a cordoned node refuses an ordinary pod", schedtest.MakePod().Obj(), schedtest.MakeNode().Unschedulable().Obj(),
			"UnschedulableAndUnresolvable: " + ErrReasonUnschedulable},
		{"a cordoned node takes a pod tolerating the unschedulable taint",
			schedtest.MakePod().Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(),
			schedtest.MakeNode().Unschedulable().Obj(), ""},
		{"a cordoned node takes a pod tolerating everything",
			schedtest.MakePod().Toleration("", v1.TolerationOpExists, "", "").Obj(), schedtest.MakeNode().Unschedulable().Obj(), ""},
		{"a NoExecute-only toleration is not enough",
			schedtest.MakePod().Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoExecute).Obj(),
			schedtest.MakeNode().Unschedulable().Obj(), "UnschedulableAndUnresolvable: " + ErrReasonUnschedulable},
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
