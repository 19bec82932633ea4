package defaultbinder

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func TestBindPostsABindingWithTheTargetNodeAndThePodUID(t *testing.T) {
	cs := fake.NewClientset()
	var got *v1.Binding
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, kruntime.Object, error) {
		if a.GetSubresource() == "binding" {
			got = a.(k8stesting.CreateAction).GetObject().(*v1.Binding)
			return true, got, nil
		}
		return false, nil, nil
	})
	h := schedtest.Framework(t, cs, runtime.Registry{}, nil)
	p, err := New(nil, h)
	if err != nil {
		t.Fatal(err)
	}
	pod := schedtest.MakePod().Name("web").UID("u1").Obj()
	if s := p.(framework.BindPlugin).Bind(context.Background(), framework.NewCycleState(), pod, "n7"); !s.IsSuccess() {
		t.Fatalf("Bind: %v", s)
	}
	if got == nil || got.Name != "web" || got.Namespace != "default" || got.UID != "u1" || got.Target.Kind != "Node" || got.Target.Name != "n7" {
		t.Fatalf("binding = %+v", got)
	}
}
