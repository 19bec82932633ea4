package daemonset

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

// unhashed drops a revision's controller-revision-hash label, as on revisions made by controllers
// older than the label or by hand.
func unhashed(r *appsv1.ControllerRevision) *appsv1.ControllerRevision {
	delete(r.Labels, appsv1.DefaultDaemonSetUniqueLabelKey)
	return r
}

// relabelledRevisions lists the hash label each revision update of the last sync wrote, by name.
func (fx *fixture) relabelledRevisions() map[string]string {
	out := map[string]string{}
	for _, a := range controllertest.Filter(fx.client.Actions(), "update", "controllerrevisions") {
		r := a.(k8stesting.UpdateAction).GetObject().(*appsv1.ControllerRevision)
		out[r.Name] = r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	}
	return out
}

// As in Kubernetes, the revision of the current template gets the hash label from its name when it
// has none, and that name is the hash its pods carry: pods already labelled with it are up to date
// and new ones are labelled with it, rather than all pods being rolled to an empty hash.
func TestCurrentRevisionWithoutHashLabelIsLabelledWithItsName(t *testing.T) {
	ds := newDS()
	legacy := unhashed(templateRevision(t, "legacy", &ds.Spec.Template, 1))
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), legacy,
		daemonPod(ds, "p1", "n1", withHash("agent-legacy")))
	fx.sync(t)
	if got := fx.relabelledRevisions(); len(got) != 1 || got["agent-legacy"] != "agent-legacy" {
		t.Fatalf("revision updates %v, want agent-legacy labelled with its name", got)
	}
	if got := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions"); len(got) != 0 {
		t.Fatalf("created %d revisions, want the labelled one used", len(got))
	}
	creates := controllertest.Filter(fx.client.Actions(), "create", "pods")
	if len(creates) != 1 {
		t.Fatalf("%d pods created, want 1 on n2", len(creates))
	}
	if h := creates[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod).Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "agent-legacy" {
		t.Fatalf("new pod has hash %q, want agent-legacy", h)
	}
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v, want p1 kept (it runs the current revision)", got)
	}
	if st := fx.status(t); st.UpdatedNumberScheduled != 1 {
		t.Errorf("status %+v, want p1 counted updated", st)
	}
}

// An old revision without the hash label is labelled with its name too, so the pods that carry it
// keep it from being pruned, as in Kubernetes.
func TestOldRevisionWithoutHashLabelIsMatchedToItsPods(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(0)) })
	older, old := ds.Spec.Template.DeepCopy(), ds.Spec.Template.DeepCopy()
	older.Spec.Containers[0].Image = "agent:0"
	old.Spec.Containers[0].Image = "agent:0.5"
	fx := newFixture(t, ds, newNode("n1"),
		unhashed(templateRevision(t, "legacy", older, 1)), templateRevision(t, "gone", old, 2),
		daemonPod(ds, "p1", "n1", withHash("agent-legacy")))
	fx.sync(t)
	if got := fx.relabelledRevisions(); got["agent-legacy"] != "agent-legacy" {
		t.Fatalf("revision updates %v, want agent-legacy labelled with its name", got)
	}
	var pruned []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		pruned = append(pruned, a.(k8stesting.DeleteAction).GetName())
	}
	if !slices.Equal(pruned, []string{"agent-gone"}) {
		t.Fatalf("pruned %v, want only agent-gone (pod p1 runs agent-legacy)", pruned)
	}
}

// prunedRevisions lists the revisions the last sync deleted, in order.
func (fx *fixture) prunedRevisions() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		out = append(out, a.(k8stesting.DeleteAction).GetName())
	}
	return out
}

// A pod created by an earlier sync but not yet seen runs a revision the cache cannot show in use,
// once the template has changed since. As in Kubernetes, history is pruned only by a sync whose
// creations have all been observed, so that revision is kept for as long as its pod runs.
func TestHistoryNotPrunedWhileCreationsUnobserved(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(0)) })
	fx := newFixture(t, ds, newNode("n1"), ownedRevision("a", 1))
	fx.c.exp.ExpectCreations("ns/agent", 1) // the pod of revision a on n1, made by the last sync
	fx.sync(t)
	if got := fx.prunedRevisions(); len(got) != 0 {
		t.Fatalf("pruned %v while a creation is unobserved, want nothing pruned", got)
	}
	if err := fx.pods.Add(daemonPod(ds, "p1", "n1", withHash("a"))); err != nil {
		t.Fatal(err)
	}
	fx.c.exp.CreationObserved("ns/agent")
	fx.cacheRevisions(t)
	fx.client.ClearActions()
	fx.sync(t)
	if got := fx.prunedRevisions(); len(got) != 0 {
		t.Fatalf("pruned %v, want agent-a kept (pod p1 runs it)", got)
	}
}

// A revision that cannot be deleted does not hold up the DaemonSet: as in Kubernetes, history is
// pruned after the pods are made right, and the status is still updated; the error is returned
// so the sync is retried.
func TestFailedPruneDoesNotBlockPodsOrStatus(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(0)) })
	fx := newFixture(t, ds, newNode("n1"), ownedRevision("a", 1))
	fx.client.PrependReactor("delete", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "agent-a", errors.New("denied by policy"))
	})
	if err := fx.c.sync(context.Background(), "ns/agent"); err == nil {
		t.Fatal("sync succeeded though pruning failed")
	}
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("created on %v, want n1 despite the failed prune", got)
	}
	if st := fx.status(t); st.DesiredNumberScheduled != 1 || st.ObservedGeneration != ds.Generation {
		t.Fatalf("status %+v, want it updated despite the failed prune", st)
	}
}
