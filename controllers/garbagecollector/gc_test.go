package garbagecollector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/runner"
	"github.com/skiffkube/skiff/controllers/sharedinformers"
)

const ns = "gc"

type env struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	rec    *record.FakeRecorder
}

// start runs a real API server and the garbage collector against it. With shared, the collector
// runs as in skiff server: another loop of the process already watches configmaps through a
// sharedinformers pool, and the collector must use that informer, not a metadata watch of its own.
func start(t *testing.T, shared bool) *env {
	t.Helper()
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	md := metadata.NewForConfigOrDie(srv.Config)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	rec := record.NewFakeRecorder(1000)
	ctx, cancel := context.WithCancel(context.Background())
	opts := Options{
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		DiscoveryPeriod: 500 * time.Millisecond, Recheck: 500 * time.Millisecond,
	}
	var configMaps cache.SharedIndexInformer
	if shared {
		pool := sharedinformers.New(ctx, informers.NewSharedInformerFactory(client, 0))
		t.Cleanup(pool.Shutdown) // runs after cancel (cleanups run last first)
		view := pool.View(0)
		configMaps = view.Core().V1().ConfigMaps().Informer() // "another loop" asks for configmaps
		view.Start(ctx.Done())
		opts.Shared = view
	}
	c, err := New(client.Discovery(), md, rec, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Run(ctx, 2); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if shared {
		gr := schema.GroupResource{Resource: "configmaps"}
		waitFor(t, "the configmaps monitor", func() bool { return c.monitorFor(gr) != nil })
		if m := c.monitorFor(gr); m.informer.GetStore() != configMaps.GetStore() {
			t.Fatal("the collector watches configmaps itself although the process has an informer for them")
		}
		if c.monitorFor(schema.GroupResource{Resource: "secrets"}) == nil {
			t.Fatal("no monitor for secrets: resources without a shared informer must still be watched")
		}
	}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &env{client: client, dyn: dyn, rec: rec}
}

// bothWays runs test with the collector's own metadata informers and with a shared typed one.
func bothWays(t *testing.T, test func(t *testing.T, e *env)) {
	for _, shared := range []bool{false, true} {
		name := "own informers"
		if shared {
			name = "shared informers"
		}
		t.Run(name, func(t *testing.T) { test(t, start(t, shared)) })
	}
}

func (e *env) configMap(t *testing.T, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ownedBy(cm *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: &block}
}

func (e *env) del(t *testing.T, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := e.client.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// get returns the configmap or nil once it is gone.
func (e *env) get(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.client.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBackgroundDeletesDependentsAfterOwner(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		owner := e.configMap(t, "owner")
		e.configMap(t, "child", ownedBy(owner, false))
		grandchild := e.configMap(t, "grandchild", ownedBy(e.get(t, "child"), false))
		_ = grandchild
		e.del(t, "owner", metav1.DeletePropagationBackground)
		waitFor(t, "child and grandchild to be collected", func() bool { return e.get(t, "child") == nil && e.get(t, "grandchild") == nil })
	})
}

func TestDependentWithAnotherLiveOwnerOnlyLosesTheReference(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		a, b := e.configMap(t, "a"), e.configMap(t, "b")
		e.configMap(t, "shared", ownedBy(a, false), ownedBy(b, false))
		e.del(t, "a", metav1.DeletePropagationBackground)
		waitFor(t, "the reference to a to go", func() bool {
			cm := e.get(t, "shared")
			return cm != nil && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == b.UID
		})
	})
}

func TestDanglingOwnerReferenceIsCollected(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		e.configMap(t, "stray", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: types.UID("no-such-uid")})
		waitFor(t, "stray to be collected", func() bool { return e.get(t, "stray") == nil })
	})
}

func TestOrphanKeepsDependentsAndDropsReferences(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		owner := e.configMap(t, "owner")
		e.configMap(t, "child", ownedBy(owner, true))
		e.del(t, "owner", metav1.DeletePropagationOrphan)
		waitFor(t, "owner to be gone", func() bool { return e.get(t, "owner") == nil })
		child := e.get(t, "child")
		if child == nil || len(child.OwnerReferences) != 0 {
			t.Fatalf("child after orphaning: %+v", child)
		}
		// The child stays: nothing collects an object without owners.
		time.Sleep(time.Second)
		if e.get(t, "child") == nil {
			t.Fatal("orphaned child was deleted")
		}
	})
}

func TestForegroundWaitsForBlockingDependents(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		const hold = "example.com/hold"
		owner := e.configMap(t, "owner")
		child, err := e.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "child", Finalizers: []string{hold}, OwnerReferences: []metav1.OwnerReference{ownedBy(owner, true)}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.configMap(t, "loose", ownedBy(owner, false))
		e.del(t, "owner", metav1.DeletePropagationForeground)

		waitFor(t, "child deletion to start", func() bool { c := e.get(t, "child"); return c != nil && c.DeletionTimestamp != nil })
		waitFor(t, "the non-blocking dependent to go", func() bool { return e.get(t, "loose") == nil })
		time.Sleep(time.Second)
		o := e.get(t, "owner")
		if o == nil || o.DeletionTimestamp == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("owner must wait for its blocking dependent: %+v", o)
		}
		// Release the child: then the owner follows.
		child = e.get(t, "child")
		child.Finalizers = nil
		if _, err := e.client.CoreV1().ConfigMaps(ns).Update(context.Background(), child, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "owner to be gone", func() bool { return e.get(t, "owner") == nil })
	})
}

func TestForegroundCascadesThroughLevels(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		owner := e.configMap(t, "top")
		mid := e.configMap(t, "mid", ownedBy(owner, true))
		e.configMap(t, "leaf", ownedBy(mid, true))
		e.del(t, "top", metav1.DeletePropagationForeground)
		waitFor(t, "all three to be gone", func() bool {
			return e.get(t, "top") == nil && e.get(t, "mid") == nil && e.get(t, "leaf") == nil
		})
	})
}

// serveWidgets defines the namespaced custom resource widgets.gc.example.com and returns it; it
// is served a moment later.
func serveWidgets(t *testing.T, dyn dynamic.Interface) schema.GroupVersionResource {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
	"metadata":{"name":"widgets.gc.example.com"},
	"spec":{"group":"gc.example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)); err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "widgets"}
}

func TestCustomResourceOwner(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		widgets := serveWidgets(t, e.dyn)
		var w *unstructured.Unstructured
		waitFor(t, "the widget resource to be served", func() bool {
			obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
			var err error
			w, err = e.dyn.Resource(widgets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			return err == nil
		})
		// A configmap owned by the widget, and a widget owned by a configmap: both directions.
		e.configMap(t, "of-widget", metav1.OwnerReference{APIVersion: "gc.example.com/v1", Kind: "Widget", Name: "w", UID: w.GetUID()})
		cmOwner := e.configMap(t, "widget-owner")
		child := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "child"}}}
		child.SetOwnerReferences([]metav1.OwnerReference{ownedBy(cmOwner, false)})
		if _, err := e.dyn.Resource(widgets).Namespace(ns).Create(ctx, child, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		if err := e.dyn.Resource(widgets).Namespace(ns).Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.del(t, "widget-owner", metav1.DeletePropagationBackground)
		waitFor(t, "the widget's configmap to be collected", func() bool { return e.get(t, "of-widget") == nil })
		waitFor(t, "the configmap's widget to be collected", func() bool {
			_, err := e.dyn.Resource(widgets).Namespace(ns).Get(ctx, "child", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})
}

// A dependent judged from a read that has since gone stale must not be
// deleted: here its owner is orphaning it, so the reference is dropped
// after the collector read the dependent and before the owner is gone. A
// delete by UID alone removed the orphan (seen as a rare failure of
// TestOrphanKeepsDependentsAndDropsReferences with two workers).
func TestStaleJudgementDeletesNothing(t *testing.T) {
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	md := metadata.NewForConfigOrDie(srv.Config)
	c, err := New(client.Discovery(), md, record.NewFakeRecorder(10), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &env{client: client}
	owner := e.configMap(t, "owner")
	e.configMap(t, "child", ownedBy(owner, true))
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	judged, err := md.Resource(gvr).Namespace(ns).Get(ctx, "child", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// What orphaning does meanwhile: the reference goes, then the owner.
	if _, err := client.CoreV1().ConfigMaps(ns).Patch(ctx, "child", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.del(t, "owner", metav1.DeletePropagationBackground) // no collector runs to finish an orphaning
	if e.get(t, "owner") != nil {
		t.Fatal("the owner is still there")
	}

	target, err := c.resolve(itemOf(&monitor{gvr: gvr, kind: "ConfigMap", namespaced: true}, judged))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.collect(ctx, target, judged); err == nil {
		t.Error("collect on a stale read reported success; want an error so the item is judged again")
	}
	if e.get(t, "child") == nil {
		t.Fatal("the orphaned child was deleted on a stale judgement")
	}
}

// A cluster-scoped object that names a namespaced owner is left alone, as
// Kubernetes does: it is neither deleted nor stripped of the reference,
// whether the named owner exists or not. As Kubernetes, the mistake is
// reported (OwnerRefInvalidNamespace) only when the owner is found, in some
// namespace: a reference to nothing that exists is not.
func TestClusterScopedDependentOfNamespacedOwnerIsLeftAlone(t *testing.T) {
	e := start(t, false)
	ctx := context.Background()
	owner := e.configMap(t, "owner")
	refs := map[string]metav1.OwnerReference{
		"of-missing-owner": {APIVersion: "v1", Kind: "ConfigMap", Name: "never", UID: types.UID("no-such-uid")},
		"of-live-owner":    ownedBy(owner, false),
	}
	reported := func() (n int) {
		for {
			select {
			case ev := <-e.rec.Events:
				if strings.Contains(ev, ReasonInvalidOwnerRefNS) {
					n++
				}
			default:
				return n
			}
		}
	}
	for _, name := range []string{"of-missing-owner", "of-live-owner"} {
		if _, err := e.client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{refs[name]}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if name == "of-missing-owner" {
			time.Sleep(2 * time.Second) // what a wrong verdict or report would do has had time to happen
			if n := reported(); n != 0 {
				t.Fatalf("a reference to an owner that exists nowhere was reported %d time(s)", n)
			}
		}
	}
	want := fmt.Sprintf(`Warning OwnerRefInvalidNamespace ownerRef [v1/ConfigMap, namespace: , name: owner, uid: %s] does not exist in namespace ""`, owner.UID)
	waitFor(t, "the reference to the live owner to be reported", func() bool {
		for {
			select {
			case ev := <-e.rec.Events:
				if ev == want {
					return true
				}
			default:
				return false
			}
		}
	})
	time.Sleep(time.Second)
	for name := range refs {
		cr, err := e.client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(cr.OwnerReferences) != 1 {
			t.Errorf("cluster role %s: %v, owner references %+v; want it kept as it was", name, err, cr.OwnerReferences)
		}
	}
}

// Two objects that own each other, both blocking, are deleted in the
// foreground: each side stops blocking its waiting owner, as Kubernetes'
// cycle check does, instead of both waiting for ever.
func TestForegroundDeletionOfAnOwnershipCycle(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		a := e.configMap(t, "a")
		b := e.configMap(t, "b", ownedBy(a, true))
		a.OwnerReferences = []metav1.OwnerReference{ownedBy(b, true)}
		if _, err := e.client.CoreV1().ConfigMaps(ns).Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.del(t, "a", metav1.DeletePropagationForeground)
		waitFor(t, "both objects of the cycle to be gone", func() bool { return e.get(t, "a") == nil && e.get(t, "b") == nil })
	})
}

// flakyDiscovery fails the discovery of one group version while down is set,
// as an aggregated API server that is briefly away.
type flakyDiscovery struct {
	discovery.DiscoveryInterface
	gv   string
	down atomic.Bool
}

func (f *flakyDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if gv == f.gv && f.down.Load() {
		return nil, apierrors.NewServiceUnavailable("away")
	}
	return f.DiscoveryInterface.ServerResourcesForGroupVersion(gv)
}

// A group whose discovery fails for a while keeps its monitors: its
// dependents stay known to the collector, as in Kubernetes.
func TestMonitorsOutliveAFailedGroupDiscovery(t *testing.T) {
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	disc := &flakyDiscovery{DiscoveryInterface: client.Discovery(), gv: "rbac.authorization.k8s.io/v1"}
	c, err := New(disc, metadata.NewForConfigOrDie(srv.Config), record.NewFakeRecorder(100),
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoveryPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.resyncMonitors(ctx); err != nil {
		t.Fatal(err)
	}
	roles := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}
	if c.monitorFor(roles) == nil {
		t.Fatal("no monitor for clusterroles")
	}
	disc.down.Store(true)
	if err := c.resyncMonitors(ctx); !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatalf("discovery with rbac away: %v, want a group discovery failure", err)
	}
	if c.monitorFor(roles) == nil {
		t.Error("the clusterroles monitor was stopped while rbac discovery failed")
	}
	if c.monitorFor(schema.GroupResource{Resource: "configmaps"}) == nil {
		t.Error("the configmaps monitor was stopped")
	}
}

// heldList holds the list and watch calls of one resource until release is
// closed (an informer lists either way, by a list or by a watch sending the
// initial objects), as an informer slow to list on a loaded machine: its
// monitor has not seen the resource's objects meanwhile. Every other call
// goes through.
type heldList struct {
	metadata.Interface
	gvr     schema.GroupVersionResource
	release chan struct{}
}

func (h *heldList) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := h.Interface.Resource(gvr)
	if gvr != h.gvr {
		return g
	}
	return heldGetter{Getter: g, release: h.release}
}

type heldGetter struct {
	metadata.Getter
	release <-chan struct{}
}

func (g heldGetter) Namespace(ns string) metadata.ResourceInterface {
	return heldResource{ResourceInterface: g.Getter.Namespace(ns), release: g.release}
}

func (g heldGetter) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return heldResource{ResourceInterface: g.Getter, release: g.release}.List(ctx, opts)
}

func (g heldGetter) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return heldResource{ResourceInterface: g.Getter, release: g.release}.Watch(ctx, opts)
}

type heldResource struct {
	metadata.ResourceInterface
	release <-chan struct{}
}

func (r heldResource) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return r.ResourceInterface.List(ctx, opts)
}

func (r heldResource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return r.ResourceInterface.Watch(ctx, opts)
}

func (r heldResource) wait(ctx context.Context) error {
	select {
	case <-r.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// An owner whose monitor has not listed yet can be deleted before it does:
// the monitor never sees it, and no deletion event brings back a dependent
// kept for it on a live read. The dependent must be judged again until the
// owner is seen or gone (seen as a rare failure of TestCustomResourceOwner on
// a loaded machine, where the widgets monitor started just before the owner
// was deleted and listed just after).
func TestDependentOfAnOwnerNotYetSeenIsJudgedAgain(t *testing.T) {
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := serveWidgets(t, dyn)
	var owner *unstructured.Unstructured
	waitFor(t, "the widget resource to be served", func() bool {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}
		var err error
		owner, err = dyn.Resource(widgets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err == nil
	})

	held := &heldList{Interface: metadata.NewForConfigOrDie(srv.Config), gvr: widgets, release: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(client.Discovery(), held, record.NewFakeRecorder(100), Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "widgets to be discovered and monitored", func() bool {
		return c.resyncMonitors(ctx) == nil && c.monitorFor(widgets.GroupResource()) != nil
	})
	configMaps := c.monitorFor(schema.GroupResource{Resource: "configmaps"})
	waitFor(t, "the configmaps monitor to list", func() bool { return configMaps.informer.HasSynced() })
	e := &env{client: client}
	dependent := e.configMap(t, "of-widget", metav1.OwnerReference{APIVersion: "gc.example.com/v1", Kind: "Widget", Name: "w", UID: owner.GetUID()})

	// Judge the dependent once, as a worker would, while its owner exists and
	// the widgets monitor has not listed it.
	want := itemOf(configMaps, &metav1.PartialObjectMetadata{ObjectMeta: dependent.ObjectMeta}).key()
	for judged := false; !judged; {
		key, _ := c.queue.Get()
		if err := c.sync(ctx, key); err != nil {
			c.queue.AddRateLimited(key) // as the runner does with a failed key
		}
		c.queue.Done(key)
		judged = key == want
	}

	// The owner goes before its monitor lists: the monitor never sees it.
	if err := dyn.Resource(widgets).Namespace(ns).Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	close(held.release)
	waitFor(t, "the widgets monitor to list", func() bool { return c.monitorFor(widgets.GroupResource()).informer.HasSynced() })
	done := make(chan struct{})
	go func() { runner.RunRetryingForever(ctx, Name, c.queue, 1, c.sync, log); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the dependent of the deleted owner to be collected", func() bool { return e.get(t, "of-widget") == nil })
}

// A namespaced object naming an owner that lives in another namespace is
// collected, as its owner does not exist in its own namespace, and, as
// Kubernetes does once it has seen that owner elsewhere, the mistake is
// reported on the object (OwnerRefInvalidNamespace) in Kubernetes' words.
func TestOwnerInAnotherNamespaceIsReported(t *testing.T) {
	bothWays(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		if _, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		owner, err := e.client.CoreV1().ConfigMaps("elsewhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Let the monitor see the owner first, as a cluster where it has long existed.
		time.Sleep(time.Second)
		e.configMap(t, "astray", ownedBy(owner, false))
		waitFor(t, "astray to be collected", func() bool { return e.get(t, "astray") == nil })
		want := fmt.Sprintf(`Warning OwnerRefInvalidNamespace ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace %q`, ns, owner.UID, ns)
		waitFor(t, "the reference to be reported", func() bool {
			for {
				select {
				case ev := <-e.rec.Events:
					if ev == want {
						return true
					}
				default:
					return false
				}
			}
		})
		if _, err := e.client.CoreV1().ConfigMaps("elsewhere").Get(ctx, "owner", metav1.GetOptions{}); err != nil {
			t.Fatalf("the owner in the other namespace: %v", err)
		}
	})
}

// busyDeletes changes one configmap's data just before each delete of it that
// carries a resourceVersion precondition, as a controller updating an object's
// status many times a second: every such delete meets a newer version.
type busyDeletes struct {
	metadata.Interface
	client kubernetes.Interface
	name   string
}

func (b busyDeletes) Resource(gvr schema.GroupVersionResource) metadata.Getter {
	g := b.Interface.Resource(gvr)
	if gvr.Resource != "configmaps" {
		return g
	}
	return busyGetter{Getter: g, b: b}
}

type busyGetter struct {
	metadata.Getter
	b busyDeletes
}

func (g busyGetter) Namespace(ns string) metadata.ResourceInterface {
	return busyResource{ResourceInterface: g.Getter.Namespace(ns), b: g.b, ns: ns}
}

type busyResource struct {
	metadata.ResourceInterface
	b  busyDeletes
	ns string
}

func (r busyResource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions, sub ...string) error {
	if name == r.b.name && opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
		cm, err := r.b.client.CoreV1().ConfigMaps(r.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = map[string]string{"beat": time.Now().String()}
		if _, err := r.b.client.CoreV1().ConfigMaps(r.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return r.ResourceInterface.Delete(ctx, name, opts, sub...)
}

// As Kubernetes' deleteObject: a dependent whose delete meets a newer version
// is deleted anyway when its owner references have not changed since it was
// judged, so that updates unrelated to them do not keep it for ever.
func TestBusyDependentIsCollected(t *testing.T) {
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	md := busyDeletes{Interface: metadata.NewForConfigOrDie(srv.Config), client: client, name: "busy"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(client.Discovery(), md, record.NewFakeRecorder(100), Options{Logger: log, DiscoveryPeriod: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Run(ctx, 2); close(done) }()
	defer func() { cancel(); <-done }()
	e := &env{client: client}
	owner := e.configMap(t, "owner")
	e.configMap(t, "busy", ownedBy(owner, false))
	e.del(t, "owner", metav1.DeletePropagationBackground)
	waitFor(t, "the busy dependent to be collected", func() bool { return e.get(t, "busy") == nil })
}
