package controllertest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
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
		m, err := meta.Accessor(ca.GetObject())
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
	// The tracker's watch hands out the objects it stores when it replays
	// them from a resourceVersion (client-go v0.37's fixture.go), and an
	// informer's transform (the manager's TrimManagedFields) edits what it
	// receives in place, racing with the tracker's readers. The API
	// server's watches decode fresh objects: give the informers copies too.
	c.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			if e.Object != nil {
				e.Object = e.Object.DeepCopyObject()
			}
			return e, true
		}), nil
	})
	return c
}

// WaitForWatches waits until client has been asked to watch each resource (plural name). An
// informer's cache syncs on its list, before its watch is open, and the fake tracker replays only
// the objects still stored when the watch opens: an object deleted in between never reaches the
// informer. Tests that change objects after WaitForCacheSync and expect the events wait here first.
// The fake records a watch and registers its watcher under one lock, so a recorded watch is open.
func WaitForWatches(t testing.TB, client *fake.Clientset, resources ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range resources {
		for len(Filter(client.Actions(), "watch", r)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no watch of %s opened", r)
			}
			time.Sleep(time.Millisecond)
		}
	}
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

// RefuseFirst has client answer the first n requests to verb resource with
// err and serve later ones as usual, as a cause that goes away does (a
// quota exceeded, an API server away). The count is of every such request.
func RefuseFirst(client *fake.Clientset, verb, resource string, n int32, err error) *atomic.Int32 {
	var count atomic.Int32
	client.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if count.Add(1) <= n {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &count
}

// FastBackoff is a controller queue's per-key exponential backoff in
// milliseconds rather than client-go's minutes, for tests that watch a key
// fail many times in a row.
func FastBackoff() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 5*time.Millisecond)
}
