package disruption

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakescale "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

var fooGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}

// fooPod is a pod controlled by the custom resource Foo "db".
func fooPod(name string, ready bool) *corev1.Pod {
	p := readyPod(name, ready)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Foo", Name: "db", UID: "uid-foo", Controller: ptrBool(true)}}
	return p
}

// newScaleFixture is newFixture with the scale subresource of example.com Foos: scale answers
// GETs of foos/scale; withScale says whether discovery lists foos/scale.
func newScaleFixture(t *testing.T, withScale bool, scale func(name string) (*autoscalingv1.Scale, error), objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	disc := client.Discovery().(*fakediscovery.FakeDiscovery)
	resources := []metav1.APIResource{{Name: "foos", Namespaced: true, Kind: "Foo"}}
	if withScale {
		resources = append(resources, metav1.APIResource{Name: "foos/scale", Namespaced: true, Kind: "Scale", Group: "autoscaling", Version: "v1"})
	}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "example.com/v1", APIResources: resources}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(fooGVK, meta.RESTScopeNamespace)
	scales := &fakescale.FakeScaleClient{}
	scales.AddReactor("get", "foos", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := scale(a.(k8stesting.GetAction).GetName())
		return true, o, err
	})
	return newFixtureWith(t, client, Options{Discovery: disc, Mapper: mapper, Scales: scales}, objs...)
}

func fooScale(replicas int32, uid string) func(string) (*autoscalingv1.Scale, error) {
	return func(name string) (*autoscalingv1.Scale, error) {
		if name != "db" {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "foos"}, name)
		}
		return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID(uid)},
			Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, nil
	}
}

// A percentage budget over the pods of a custom resource counts the replicas its scale
// subresource asks for, as Kubernetes' disruption controller does.
func TestCustomResourceScaleGivesExpectedPods(t *testing.T) {
	fx := newScaleFixture(t, true, fooScale(5, "uid-foo"), budget(nil, ptr(intstr.FromString("20%")), nil),
		fooPod("a", true), fooPod("b", true), fooPod("c", true), fooPod("d", true), fooPod("e", true))
	st := fx.status(t)
	if st.ExpectedPods != 5 || st.DesiredHealthy != 4 || st.CurrentHealthy != 5 || st.DisruptionsAllowed != 1 {
		t.Fatalf("status: %+v", st)
	}
}

// A scale whose UID is not the pods' controller's (the resource was replaced under its
// name) does not count: the budget fails safe.
func TestCustomResourceReplacedUnderItsNameFailsTheBudget(t *testing.T) {
	fx := newScaleFixture(t, true, fooScale(5, "uid-other"), budget(ptr(intstr.FromString("50%")), nil, nil),
		fooPod("a", true), fooPod("b", true))
	st := fx.status(t)
	if st.DisruptionsAllowed != 0 || len(st.Conditions) != 1 || st.Conditions[0].Reason != policyv1.SyncFailedReason ||
		!strings.Contains(st.Conditions[0].Message, "foos.example.com db not found") {
		t.Fatalf("status: %+v", st)
	}
}

// A kind whose resource has no scale subresource is named in the failure.
func TestResourceWithoutScaleSubresourceIsNamed(t *testing.T) {
	notFound := func(name string) (*autoscalingv1.Scale, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "foos"}, name)
	}
	fx := newScaleFixture(t, false, notFound, budget(ptr(intstr.FromString("50%")), nil, nil), fooPod("a", true))
	st := fx.status(t)
	if len(st.Conditions) != 1 || !strings.Contains(st.Conditions[0].Message, "foos.example.com does not implement the scale subresource") {
		t.Fatalf("status: %+v", st)
	}
	select {
	case e := <-fx.rec.Events:
		if !strings.Contains(e, ReasonExpectedCount) {
			t.Fatalf("event %q", e)
		}
	default:
		t.Fatal("no event")
	}
}

// An integer minAvailable needs no scale at all.
func TestIntegerMinAvailableNeedsNoScale(t *testing.T) {
	called := false
	fx := newScaleFixture(t, true, func(string) (*autoscalingv1.Scale, error) { called = true; return nil, context.Canceled },
		budget(ptr(intstr.FromInt32(1)), nil, nil), fooPod("a", true), fooPod("b", true))
	if st := fx.status(t); st.DisruptionsAllowed != 1 || called {
		t.Fatalf("status: %+v, scale read: %v", st, called)
	}
}
