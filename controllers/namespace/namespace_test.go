package namespace

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

var resources = []*metav1.APIResourceList{{
	GroupVersion: "v1",
	APIResources: []metav1.APIResource{
		{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list", "delete", "deletecollection"}},
		{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "update"}},
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"list", "delete"}},
		{Name: "nodes", Namespaced: false, Kind: "Node", Verbs: metav1.Verbs{"list", "delete", "deletecollection"}},
	},
}}

func meta(kind, name string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gone", Finalizers: finalizers},
	}
}

func terminating(finalizers ...corev1.FinalizerName) *corev1.Namespace {
	ts := metav1.NewTime(time.Now())
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "uid-ns", DeletionTimestamp: &ts},
		Spec:       corev1.NamespaceSpec{Finalizers: finalizers},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

type fixture struct {
	client *fake.Clientset
	md     *metadatafake.FakeMetadataClient
	c      *Controller
}

func newFixture(t *testing.T, ns *corev1.Namespace, content ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(ns)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := metadatafake.NewSimpleMetadataClient(scheme, content...)
	// The fake tracker has no deletecollection; like pods in their grace period, the objects stay.
	md.PrependReactor("delete-collection", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, md, f.Core().V1().Namespaces(), record.NewFakeRecorder(10), Options{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Load(t, f.Core().V1().Namespaces().Informer(), ns)
	client.ClearActions()
	return &fixture{client: client, md: md, c: c}
}

func (fx *fixture) namespace(t *testing.T) *corev1.Namespace {
	t.Helper()
	ns, err := fx.client.CoreV1().Namespaces().Get(context.Background(), "gone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}

func TestContentIsDeletedThenFinalized(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes), meta("ConfigMap", "a"), meta("ConfigMap", "b"))
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	var deletedConfigMaps, collections int
	for _, a := range fx.md.Actions() {
		switch {
		case a.GetVerb() == "delete" && a.GetResource().Resource == "configmaps":
			deletedConfigMaps++
		case a.GetVerb() == "delete-collection":
			collections++
			if a.GetResource().Resource != "pods" || a.GetNamespace() != "gone" {
				t.Errorf("deletecollection on %s in %q", a.GetResource().Resource, a.GetNamespace())
			}
		}
	}
	if deletedConfigMaps != 2 || collections != 1 {
		t.Errorf("configmaps deleted one by one = %d (want 2), deletecollection calls = %d (want 1: pods only, not nodes or subresources)", deletedConfigMaps, collections)
	}
	var finalized bool
	for _, a := range fx.client.Actions() {
		if a.GetSubresource() == "finalize" { // the fake records finalize as a create
			finalized = true
		}
	}
	if !finalized {
		t.Fatal("namespace not finalized after its content was gone")
	}
	// Finalizing left no finalizer, so the controller deleted the namespace.
	if _, err := fx.client.CoreV1().Namespaces().Get(context.Background(), "gone", metav1.GetOptions{}); err == nil {
		t.Error("finalized namespace still exists")
	}
}

func TestRemainingContentWaits(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes, "example.com/other"), meta("Pod", "p1", "example.com/keep"), meta("Pod", "p2"))
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	for _, a := range fx.client.Actions() {
		if a.GetSubresource() == "finalize" {
			t.Fatal("finalized while pods remain")
		}
	}
	ns := fx.namespace(t)
	c := condition(ns, corev1.NamespaceContentRemaining)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "SomeResourcesRemain" || c.Message != "Some resources are remaining: pods. has 2 resource instances" {
		t.Errorf("NamespaceContentRemaining = %+v", c)
	}
	c = condition(ns, corev1.NamespaceFinalizersRemaining)
	if c == nil || c.Status != corev1.ConditionTrue || c.Message != "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances" {
		t.Errorf("NamespaceFinalizersRemaining = %+v", c)
	}
	if c := condition(ns, corev1.NamespaceDeletionDiscoveryFailure); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("NamespaceDeletionDiscoveryFailure = %+v", c)
	}
}

func TestIgnoredNamespaces(t *testing.T) {
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "uid-ns"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	fx := newFixture(t, live, meta("ConfigMap", "a"))
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if len(fx.client.Actions()) != 0 || len(fx.md.Actions()) != 0 {
		t.Errorf("actions on a live namespace: %v %v", fx.client.Actions(), fx.md.Actions())
	}
	// As Kubernetes: a namespace with no spec finalizer left is finalized, whatever holds it (here
	// a metadata finalizer), and its content is no longer this controller's business.
	finalized := terminating()
	finalized.Finalizers = []string{"example.com/meta"}
	fx = newFixture(t, finalized, meta("ConfigMap", "a"))
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if len(fx.client.Actions()) != 0 || len(fx.md.Actions()) != 0 {
		t.Errorf("actions on a finalized namespace: %v %v", fx.client.Actions(), fx.md.Actions())
	}
}

// As Kubernetes: while any spec finalizer remains, the content is deleted even when the
// "kubernetes" one is gone (someone finalized it early, or the namespace was created without
// it); the namespace then waits for the other finalizers' owners.
func TestContentIsDeletedWithoutOurFinalizer(t *testing.T) {
	fx := newFixture(t, terminating("example.com/other"), meta("ConfigMap", "a"))
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range fx.md.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "configmaps" {
			deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
		}
	}
	if !slices.Equal(deleted, []string{"a"}) {
		t.Errorf("configmaps deleted %v, want [a]", deleted)
	}
	ns := fx.namespace(t)
	if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{"example.com/other"}) {
		t.Errorf("spec.finalizers = %v, want the other finalizer kept", ns.Spec.Finalizers)
	}
	if c := condition(ns, corev1.NamespaceContentRemaining); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("NamespaceContentRemaining = %+v", c)
	}
}

// As Kubernetes: one failure per resource (the first), as the API server
// worded it, counted and sorted so that the same failures leave the condition
// unchanged.
func TestFailedDeletesAreCountedAndSorted(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes), meta("ConfigMap", "b"), meta("ConfigMap", "a"), meta("ConfigMap", "c"))
	fx.md.PrependReactor("delete", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.DeleteAction).GetName(); name != "a" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, name, errors.New("no"))
		}
		return false, nil, nil
	})
	fx.md.PrependReactor("delete-collection", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("not today"))
	})
	if err := fx.c.sync(context.Background(), "gone"); err == nil {
		t.Fatal("sync reported no error for failed deletes")
	}
	c := condition(fx.namespace(t), corev1.NamespaceDeletionContentFailure)
	want := `Failed to delete all resource types, 2 remaining: configmaps "b" is forbidden: no, pods is forbidden: not today`
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "ContentDeletionFailed" || c.Message != want {
		t.Errorf("NamespaceDeletionContentFailure = %+v\nwant message %s", c, want)
	}
}

// Which resources are deleted and how, as kube-controller-manager: only those
// discovery says can be deleted; with deletecollection where it is offered
// (even where they cannot be listed) and served, one by one where it is not;
// always in the background, so no kind waits on the orphan finalizer.
func TestWhatIsDeletedAndHow(t *testing.T) {
	ns := terminating(corev1.FinalizerKubernetes)
	widget := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gone"},
		}
	}
	fx := newFixture(t, ns, meta("ConfigMap", "a"), widget("w1"), widget("w2"))
	fake := fx.client.Discovery().(*fakediscovery.FakeDiscovery)
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"list", "delete", "deletecollection"}},
			{Name: "blind", Namespaced: true, Kind: "Blind", Verbs: metav1.Verbs{"delete", "deletecollection"}},
			{Name: "sealed", Namespaced: true, Kind: "Sealed", Verbs: metav1.Verbs{"list", "deletecollection"}},
		},
	})
	// The server turns down deletecollection of widgets after all.
	fx.md.PrependReactor("delete-collection", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewMethodNotSupported(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "deletecollection")
	})
	// The fake metadata client drops deletecollection's options: note them on the way.
	collections := map[string]metav1.DeletionPropagation{}
	fx.c.metadata = collectionOptions{Interface: fx.md, seen: collections}
	if err := fx.c.sync(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range fx.md.Actions() {
		if a.GetVerb() == "list" {
			continue
		}
		name := a.GetResource().Resource
		if d, ok := a.(k8stesting.DeleteAction); ok {
			name += " " + d.GetName()
		}
		got = append(got, a.GetVerb()+" "+name)
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			if p := d.DeleteOptions.PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("delete %s: propagation %v, want Background", name, p)
			}
		}
	}
	for resource, p := range collections {
		if p != metav1.DeletePropagationBackground {
			t.Errorf("delete-collection %s: propagation %q, want Background", resource, p)
		}
	}
	sort.Strings(got)
	want := []string{
		"delete configmaps a", "delete widgets w1", "delete widgets w2",
		"delete-collection blind", "delete-collection pods", "delete-collection widgets",
	}
	if !slices.Equal(got, want) {
		t.Errorf("actions %q\nwant %q", got, want)
	}
}

func TestDiscoveryMessageCountsFailingGroups(t *testing.T) {
	err := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}}
	want := "Discovery failed for some groups, 1 failing: " + err.Error()
	if got := discoveryMessage(err); got != want {
		t.Errorf("discoveryMessage = %q, want %q", got, want)
	}
}

// failingGroup is discovery in which one group's resources cannot be listed,
// as when an aggregated API server (metrics-server, say) is down.
type failingGroup struct {
	*fakediscovery.FakeDiscovery
	groupVersion string
}

func (d failingGroup) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	if gv == d.groupVersion {
		return nil, apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// As Kubernetes: the groups that were discovered are emptied, but a namespace
// whose discovery failed for some group may still hold objects of that group,
// so it is not finalized; it stays Terminating with DiscoveryFailed until the
// group answers again.
func TestDiscoveryFailureKeepsTheNamespace(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes), meta("ConfigMap", "a"))
	fake := fx.client.Discovery().(*fakediscovery.FakeDiscovery)
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{
		GroupVersion: "metrics.k8s.io/v1beta1",
		APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}}},
	})
	fx.c.discovery = failingGroup{FakeDiscovery: fake, groupVersion: "metrics.k8s.io/v1beta1"}
	if err := fx.c.sync(context.Background(), "gone"); err == nil {
		t.Error("sync reported no error while discovery failed")
	}
	var deleted bool
	for _, a := range fx.md.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "configmaps" {
			deleted = true
		}
	}
	if !deleted {
		t.Error("content of the discovered groups not deleted")
	}
	for _, a := range fx.client.Actions() {
		if a.GetSubresource() == "finalize" {
			t.Fatal("finalized although discovery failed for a group")
		}
	}
	c := condition(fx.namespace(t), corev1.NamespaceDeletionDiscoveryFailure)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "DiscoveryFailed" || !strings.HasPrefix(c.Message, "Discovery failed for some groups, 1 failing: ") {
		t.Errorf("NamespaceDeletionDiscoveryFailure = %+v", c)
	}
}

// A group version discovery lists but that does not parse is reported as
// Kubernetes does, in NamespaceDeletionGroupVersionParsingFailure, and keeps
// the namespace; the rest is still deleted.
func TestUnparsableGroupVersion(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes), meta("ConfigMap", "a"))
	fx.c.discovery = unparsableGroup{FakeDiscovery: fx.client.Discovery().(*fakediscovery.FakeDiscovery), list: &metav1.APIResourceList{
		GroupVersion: "example.com/v1/extra",
		APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"list", "delete"}}},
	}}
	if err := fx.c.sync(context.Background(), "gone"); err == nil {
		t.Error("sync reported no error for an unparsable group version")
	}
	for _, a := range fx.client.Actions() {
		if a.GetSubresource() == "finalize" {
			t.Fatal("finalized although a group version could not be parsed")
		}
	}
	ns := fx.namespace(t)
	c := condition(ns, corev1.NamespaceDeletionGVParsingFailure)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "GroupVersionParsingFailed" || c.Message != "unexpected GroupVersion string: example.com/v1/extra" {
		t.Errorf("NamespaceDeletionGroupVersionParsingFailure = %+v", c)
	}
	if c := condition(ns, corev1.NamespaceDeletionContentFailure); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("NamespaceDeletionContentFailure = %+v, want false: no delete failed", c)
	}
}

// unparsableGroup adds to the fake's groups one whose group version does not
// parse (the fake builds its groups by parsing, so cannot hold one itself).
type unparsableGroup struct {
	*fakediscovery.FakeDiscovery
	list *metav1.APIResourceList
}

func (d unparsableGroup) ServerGroupsWithContext(ctx context.Context) (*metav1.APIGroupList, error) {
	groups, err := d.FakeDiscovery.ServerGroupsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	group, version, _ := strings.Cut(d.list.GroupVersion, "/")
	v := metav1.GroupVersionForDiscovery{GroupVersion: d.list.GroupVersion, Version: version}
	groups.Groups = append(groups.Groups, metav1.APIGroup{Name: group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	return groups, nil
}

func (d unparsableGroup) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	if gv == d.list.GroupVersion {
		return d.list, nil
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// collectionOptions notes the propagation policy of each deletecollection.
type collectionOptions struct {
	metadata.Interface
	seen map[string]metav1.DeletionPropagation
}

func (m collectionOptions) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	return collectionGetter{Getter: m.Interface.Resource(gvr), resource: gvr.Resource, seen: m.seen}
}

type collectionGetter struct {
	metadata.Getter
	resource string
	seen     map[string]metav1.DeletionPropagation
}

func (g collectionGetter) Namespace(ns string) metadata.ResourceInterface {
	return collectionResource{ResourceInterface: g.Getter.Namespace(ns), resource: g.resource, seen: g.seen}
}

type collectionResource struct {
	metadata.ResourceInterface
	resource string
	seen     map[string]metav1.DeletionPropagation
}

func (r collectionResource) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, list metav1.ListOptions) error {
	r.seen[r.resource] = ""
	if opts.PropagationPolicy != nil {
		r.seen[r.resource] = *opts.PropagationPolicy
	}
	return r.ResourceInterface.DeleteCollection(ctx, opts, list)
}

// afterQueue notes when the controller asks to look at a namespace again.
type afterQueue struct {
	runner.Queue
	after map[string]time.Duration
}

func (q afterQueue) AddAfter(key string, d time.Duration) { q.after[key] = d }

func runningPod(name string, grace int64, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gone"},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: &grace},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// As Kubernetes: pods still in their grace period are waited for, about half
// the longest grace period of the pods still running at a time, for as long as
// that grace has not run out since the namespace was deleted; content held by
// finalizers is looked at again after 8 seconds; content that stays with
// neither is a failure, retried with backoff.
func TestRemainingContentIsWaitedForAsKubernetes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deletedAgo time.Duration
		pods       []*corev1.Pod
		finalizers []string
		wantAfter  time.Duration
		wantErr    string
	}{
		{name: "pods in their grace period", deletedAgo: 10 * time.Second,
			pods:      []*corev1.Pod{runningPod("p", 30, corev1.PodRunning), runningPod("slow", 60, corev1.PodRunning), runningPod("done", 600, corev1.PodSucceeded)},
			wantAfter: 31 * time.Second},
		{name: "held by a finalizer", deletedAgo: 10 * time.Second, finalizers: []string{"example.com/keep"}, wantAfter: 8 * time.Second},
		{name: "grace run out", deletedAgo: 61 * time.Second,
			pods:    []*corev1.Pod{runningPod("p", 30, corev1.PodRunning), runningPod("slow", 60, corev1.PodRunning)},
			wantErr: "Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: gone for gvr: /v1, Resource=pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := terminating(corev1.FinalizerKubernetes)
			now := time.Now()
			deleted := metav1.NewTime(now.Add(-tc.deletedAgo))
			ns.DeletionTimestamp = &deleted
			fx := newFixture(t, ns, meta("Pod", "p", tc.finalizers...))
			for _, p := range tc.pods {
				if err := fx.client.Tracker().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			q := afterQueue{Queue: fx.c.queue, after: map[string]time.Duration{}}
			fx.c.queue, fx.c.now = q, func() time.Time { return now }
			err := fx.c.sync(context.Background(), "gone")
			if (err != nil) != (tc.wantErr != "") {
				t.Fatalf("sync: %v, want an error: %v", err, tc.wantErr != "")
			}
			for _, a := range fx.client.Actions() {
				if a.GetSubresource() == "finalize" {
					t.Fatal("finalized while content remains")
				}
			}
			if got := q.after["gone"]; got != tc.wantAfter {
				t.Errorf("looked at again after %v, want %v", got, tc.wantAfter)
			}
			ns = fx.namespace(t)
			if c := condition(ns, corev1.NamespaceContentRemaining); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("NamespaceContentRemaining = %+v", c)
			}
			c := condition(ns, corev1.NamespaceDeletionContentFailure)
			if tc.wantErr == "" && (c == nil || c.Status != corev1.ConditionFalse) || tc.wantErr != "" && (c == nil || c.Status != corev1.ConditionTrue || c.Message != tc.wantErr) {
				t.Errorf("NamespaceDeletionContentFailure = %+v, want message %q", c, tc.wantErr)
			}
		})
	}
}

// As Kubernetes: a namespace seen terminating is worked on five seconds later,
// once every API server has seen it terminating and refuses new content in
// it; content one of them let in just before is then deleted too, rather than
// outliving a namespace emptied and finalized at once.
func TestTerminatingNamespaceIsWorkedOnAfterAGracePeriod(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes))
	q := afterQueue{Queue: fx.c.queue, after: map[string]time.Duration{}}
	fx.c.queue = q
	fx.c.enqueue(terminating(corev1.FinalizerKubernetes))
	if got := q.after["gone"]; got != 5*time.Second {
		t.Errorf("queued after %v, want 5s", got)
	}
	if n := fx.c.queue.Len(); n != 0 {
		t.Errorf("%d namespaces queued at once", n)
	}
}

// As Kubernetes: a namespace whose deletion keeps failing (a pod whose node is
// gone, a webhook refusing deletes) is retried at least once a minute, not
// with the default controller backoff that grows to more than a quarter of an
// hour, so that it goes soon after what held it is fixed.
func TestFailingNamespaceIsRetriedAtLeastEveryMinute(t *testing.T) {
	rl := retryLimiter()
	var last time.Duration
	for range 30 {
		last = rl.When("gone")
	}
	if last != time.Minute {
		t.Errorf("after 30 failures retried in %v, want 1m", last)
	}
	rl.Forget("gone")
	if d := rl.When("gone"); d > 10*time.Millisecond {
		t.Errorf("first retry after %v, want a few milliseconds", d)
	}
}

// As Kubernetes: pods that cannot be listed to estimate their termination are
// not deleted this time, and the failure is reported as the API server worded
// it, like any other failure of the content's deletion.
func TestPodsEstimateFailureIsReportedAsKubernetes(t *testing.T) {
	fx := newFixture(t, terminating(corev1.FinalizerKubernetes), meta("Pod", "p"))
	fx.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("not today"))
	})
	if err := fx.c.sync(context.Background(), "gone"); err == nil {
		t.Fatal("sync reported no error")
	}
	for _, a := range fx.md.Actions() {
		if a.GetResource().Resource == "pods" && strings.HasPrefix(a.GetVerb(), "delete") {
			t.Errorf("pods deleted without an estimate: %v", a)
		}
	}
	c := condition(fx.namespace(t), corev1.NamespaceDeletionContentFailure)
	want := `Failed to delete all resource types, 1 remaining: pods is forbidden: not today`
	if c == nil || c.Status != corev1.ConditionTrue || c.Message != want {
		t.Errorf("NamespaceDeletionContentFailure = %+v\nwant message %s", c, want)
	}
}
