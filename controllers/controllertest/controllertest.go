package controllertest

import (
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// NewClient returns a fake clientset holding objs whose creates behave like the apiserver's for names
// and uids: an empty name is generated from generateName, and a missing uid is filled in.
func NewClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := metav1.Accessor(ca.GetObject())
		if err != nil {
			return false, nil, nil
		}
		id := n.Add(1)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), id))
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-created-%d", id)))
		}
		return false, nil, nil
	})
	return c
}

// Load adds objects to an informer's indexer, as if the informer had listed them.
func Load(t testing.TB, inf cache.SharedIndexInformer, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if err := inf.GetIndexer().Add(o); err != nil {
			t.Fatalf("load %T into indexer: %v", o, err)
		}
	}
}

// Filter returns the actions with the given verb and resource ("" matches any), skipping reads.
func Filter(actions []k8stesting.Action, verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			if verb != a.GetVerb() {
				continue
			}
		}
		if (verb == "" || a.GetVerb() == verb) && (resource == "" || a.GetResource().Resource == resource) {
			out = append(out, a)
		}
	}
	return out
}

// Events drains a FakeRecorder channel.
func Events(ch chan string) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}
