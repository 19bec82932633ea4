package schedtest

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/cache"
	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
)

// Framework builds a real runtime.Framework over a snapshot of infos with the
// given plugins enabled (cs may be nil for a fresh fake clientset). It is the
// framework.Handle plugins get in tests.
func Framework(t testing.TB, cs kubernetes.Interface, reg runtime.Registry, plugins []runtime.PluginConfig, infos ...*framework.NodeInfo) *runtime.Framework {
	t.Helper()
	if cs == nil {
		cs = fake.NewClientset()
	}
	f, err := runtime.New(reg, plugins, runtime.Options{ClientSet: cs, Snapshot: cache.NewSnapshot(infos...), Parallelism: 4})
	if err != nil {
		t.Fatalf("building framework: %v", err)
	}
	return f
}

// Handle is a Framework with no plugins: what a single plugin under test is
// constructed with.
func Handle(t testing.TB, infos ...*framework.NodeInfo) *runtime.Framework {
	return Framework(t, nil, runtime.Registry{}, nil, infos...)
}

// HintCase is one row of a queueing-hint table: for pod, rejected by the
// plugin, the change from Old to New should get Want (and an error when
// WantErr; an error always comes with Queue).
type HintCase struct {
	Name     string
	Pod      *v1.Pod
	Old, New any
	Want     framework.QueueingHint
	WantErr  bool
}

// RunHintCases runs each case through fn as a subtest.
func RunHintCases(t *testing.T, fn framework.QueueingHintFn, cases []HintCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			pod := c.Pod
			if pod == nil {
				pod = &v1.Pod{}
			}
			got, err := fn(pod, c.Old, c.New)
			if (err != nil) != c.WantErr {
				t.Errorf("error = %v, want error: %v", err, c.WantErr)
			}
			if got != c.Want {
				t.Errorf("hint = %v, want %v", got, c.Want)
			}
		})
	}
}
