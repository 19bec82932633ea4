package nodename

import (
	"testing"

	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestNodeNameFilter(t *testing.T) {
	node := schedtest.MakeNode().Name("n1").Obj()
	tests := []struct {
		name, podNode, want string
	}{
		{"a pod without a node name fits anywhere", "", ""},
		{"a pod naming this node fits", "n1", ""},
		{"a pod naming another node does not fit", "n2", "UnschedulableAndUnresolvable: " + ErrReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := New(nil, nil)
			pod := schedtest.MakePod().Node(tc.podNode).Obj()
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, pod, schedtest.NodeInfo(node))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
