package schedtest

import (
	"testing"

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
