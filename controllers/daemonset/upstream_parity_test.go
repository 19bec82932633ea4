package daemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/revision"
	"github.com/skiffkube/skiff/controllers/runner"
)

func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(now)
	p.DeletionTimestamp = &ts
}

// Without surge, Kubernetes creates a node's replacement daemon pod only once the old one is gone,
// so a daemon holding host ports, sockets or devices never overlaps with its successor.
func TestReplacementWaitsForTheTerminatingPod(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), daemonPod(ds, "old", "n1", oldRevision, terminating))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("created on %v, want only n2 while n1's old pod terminates", got)
	}
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v", got)
	}

	// With maxSurge the new pod may start beside the terminating one.
	surge := newDS(func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	})
	fx = newFixture(t, surge, newNode("n1"), daemonPod(surge, "old", "n1", oldRevision, terminating))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("surge: created on %v, want n1", got)
	}
}

// A template nodeName restricts the DaemonSet to that node, as in Kubernetes.
func TestTemplateNodeNameRestrictsNodes(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "n2" })
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), newNode("n3"))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("created on %v, want only n2", got)
	}
	if st := fx.status(t); st.DesiredNumberScheduled != 1 {
		t.Errorf("status: %+v", st)
	}
}

// A daemon pod that ended Succeeded (e.g. stopped by a node shutdown with exit code 0) is deleted
// and replaced, like a failed one.
func TestSucceededPodIsDeleted(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"),
		daemonPod(ds, "done", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("deleted %v, want the succeeded pod", got)
	}
}

// maxSurge percentages are of the nodes that should run the pod, not of all nodes.
func TestMaxSurgePercentOfDesiredNodes(t *testing.T) {
	ds := newDS(selecting("role", "edge"), func(ds *appsv1.DaemonSet) {
		pct, zero := intstr.FromString("50%"), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &pct, MaxUnavailable: &zero}
	})
	objs := []runtime.Object{ds,
		newNode("e1", label("role", "edge")), newNode("e2", label("role", "edge")),
		newNode("x1"), newNode("x2"), newNode("x3"), newNode("x4"), newNode("x5"), newNode("x6"),
		daemonPod(ds, "o1", "e1", oldRevision), daemonPod(ds, "o2", "e2", oldRevision)}
	fx := newFixture(t, objs...)
	fx.sync(t)
	// 50% of 2 desired nodes is 1 (not 50% of 8 nodes = 4).
	if got := fx.createdOn(); len(got) != 1 {
		t.Fatalf("created on %v, want one surge pod", got)
	}
}

// A template toleration for a default daemon taint is replaced by the controller's infinite one
// (Kubernetes' AddOrUpdate semantics), so a tolerationSeconds copied from elsewhere does not get
// daemon pods evicted from not-ready nodes; one that merely shares key and effect (another operator
// or value) does not stand in for it.
func TestDefaultTolerationsOverrideMatchingOnes(t *testing.T) {
	secs := int64(300)
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{
			{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
			{Key: taintUnreachable, Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoExecute},
		}
	})
	fx := newFixture(t, ds, newNode("n1"))
	fx.sync(t)
	pods := controllertest.Filter(fx.client.Actions(), "create", "pods")
	if len(pods) != 1 {
		t.Fatalf("created %d pods", len(pods))
	}
	pod := pods[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	var notReady, unreachableExists int
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == taintNotReady {
			notReady++
			if tol.TolerationSeconds != nil {
				t.Errorf("not-ready toleration kept tolerationSeconds: %+v", tol)
			}
		}
		if tol.Key == taintUnreachable && tol.Operator == corev1.TolerationOpExists && tol.TolerationSeconds == nil {
			unreachableExists++
		}
	}
	if notReady != 1 || unreachableExists != 1 {
		t.Errorf("tolerations %+v: want one infinite not-ready and an added unreachable Exists", pod.Spec.Tolerations)
	}
}

// revisionHistoryLimit bounds all old revisions, as in Kubernetes: one still run by a pod counts
// against the limit (it is kept, and fewer unused ones are).
func TestHistoryLimitCountsRevisionsInUse(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(1)) })
	fx := newFixture(t, ds, newNode("n1"), ownedRevision("r1", 1), ownedRevision("r2", 2), ownedRevision("r3", 3),
		daemonPod(ds, "a", "n1", func(p *corev1.Pod) { p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = "r1" }))
	fx.sync(t)
	var deleted []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	if !slices.Equal(deleted, []string{"agent-r2", "agent-r3"}) {
		t.Fatalf("pruned %v, want agent-r2 and agent-r3 (agent-r1 is in use and fills the limit of 1)", deleted)
	}
}

// A revision is in use when a pod carries its hash label, whatever the revision's name, as in
// Kubernetes: revisions taken over from a DaemonSet of another name (deleted with
// --cascade=orphan, its pods adopted too) keep the ones their pods still run.
func TestRevisionInUseFoundByHashLabelNotName(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(0)) })
	renamed := func(r *appsv1.ControllerRevision) *appsv1.ControllerRevision {
		r.Name = "old-" + r.Name
		return r
	}
	fx := newFixture(t, ds, newNode("n1"), renamed(ownedRevision("h1", 1)), renamed(ownedRevision("h2", 2)),
		daemonPod(ds, "a", "n1", withHash("h1")))
	fx.sync(t)
	var deleted []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	if !slices.Equal(deleted, []string{"old-agent-h2"}) {
		t.Fatalf("pruned %v, want only old-agent-h2 (old-agent-h1 is run by pod a)", deleted)
	}
}

// While earlier creations and deletions are still unobserved the controller does not act on the
// DaemonSet, so, as in Kubernetes, it refreshes the counts but does not claim to have observed
// the new generation (kubectl rollout status keeps waiting).
func TestObservedGenerationWaitsForExpectations(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Status.ObservedGeneration = 2 })
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), daemonPod(ds, "a", "n1"))
	fx.c.exp.ExpectCreations("ns/agent", 1)
	fx.sync(t)
	if got := fx.createdOn(); len(got) != 0 {
		t.Fatalf("created on %v with creations pending", got)
	}
	st := fx.status(t)
	if st.ObservedGeneration != 2 || st.DesiredNumberScheduled != 2 || st.CurrentNumberScheduled != 1 {
		t.Fatalf("status %+v: want the counts refreshed and observedGeneration left at 2", st)
	}
}

// Pods carry the template generation the API server keeps on the DaemonSet
// as the pod-template-generation label.
func TestPodsLabelledWithTemplateGeneration(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "4"}
	})
	if got := podFor(ds, "n1", "h").Labels["pod-template-generation"]; got != "4" {
		t.Errorf("pod-template-generation %q, want 4", got)
	}
	if _, ok := podFor(newDS(), "n1", "h").Labels["pod-template-generation"]; ok {
		t.Error("a DaemonSet without the annotation gave its pods the label")
	}
}

// A sync that waits for earlier creations or deletions does not act, so, as in Kubernetes, it
// neither reports a finished pod it does not delete nor spends the node's back-off on it: the
// next sync that acts deletes the failed pod at once.
func TestFinishedPodsLeftAloneWhileExpectationsPending(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), newNode("n3"),
		daemonPod(ds, "broken", "n1", failed),
		daemonPod(ds, "done", "n2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))
	fx.c.exp.ExpectCreations("ns/agent", 1)
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v with creations pending", got)
	}
	if got := controllertest.Events(fx.rec.Events); len(got) != 0 {
		t.Fatalf("events %v from a sync that deleted nothing", got)
	}
	fx.cacheRevisions(t)
	fx.c.exp.CreationObserved("ns/agent")
	fx.client.ClearActions()
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"broken", "done"}) {
		t.Fatalf("deleted %v once expectations were met, want the failed pod at once (no back-off) and the succeeded one", got)
	}
}

// cacheRevisions brings the ControllerRevisions a sync wrote into the informer cache, as the
// watch would.
func (fx *fixture) cacheRevisions(t *testing.T) {
	t.Helper()
	revs, err := fx.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range revs.Items {
		if err := fx.revs.Add(&revs.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// A daemon pod still waiting to be bound to a node that has since been deleted can never be
// scheduled, and PodGC only collects pods bound to missing nodes, so the controller deletes it,
// as in Kubernetes; a pod already bound to the missing node stays for PodGC.
func TestUnscheduledPodOfDeletedNodeIsDeleted(t *testing.T) {
	ds := newDS()
	pending := daemonPod(ds, "pending", "", func(p *corev1.Pod) {
		p.Spec = podFor(ds, "gone", "h").Spec
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	})
	fx := newFixture(t, ds, newNode("n1"), daemonPod(ds, "a", "n1"), pending, daemonPod(ds, "bound", "also-gone"))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"pending"}) {
		t.Fatalf("deleted %v, want only the unscheduled pod of the deleted node", got)
	}
}

// As in Kubernetes, creations go in slow-start batches (1, 2, 4, …) that stop after a failing
// batch, so a quota that rejects every pod costs one request and one FailedCreate event per sync
// rather than one per node, and the skipped creations are not waited for.
func TestCreationsSlowStartAndStopOnFailure(t *testing.T) {
	ds := newDS()
	objs := []runtime.Object{ds}
	for i := range 10 {
		objs = append(objs, newNode(fmt.Sprintf("n%02d", i)))
	}
	fx := newFixture(t, objs...)
	fx.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))
	})
	if err := fx.c.sync(context.Background(), "ns/agent"); err == nil {
		t.Fatal("sync succeeded though every creation failed")
	}
	if got := len(controllertest.Filter(fx.client.Actions(), "create", "pods")); got != 1 {
		t.Fatalf("%d create requests, want 1 (the first batch failed)", got)
	}
	if got := controllertest.Events(fx.rec.Events); len(got) != 1 || !strings.Contains(got[0], ReasonFailedCreate) {
		t.Fatalf("events %v, want one FailedCreate", got)
	}
	if !fx.c.exp.Satisfied("ns/agent") {
		t.Fatal("skipped creations are still expected")
	}
}

// One sync creates at most 250 pods, as Kubernetes' controller does.
func TestCreationsCappedPerSync(t *testing.T) {
	ds := newDS()
	objs := []runtime.Object{ds}
	for i := range 250 + 10 {
		objs = append(objs, newNode(fmt.Sprintf("n%03d", i)))
	}
	fx := newFixture(t, objs...)
	fx.sync(t)
	if got := len(fx.createdOn()); got != 250 {
		t.Fatalf("created %d pods in one sync, want 250", got)
	}
}

// A deletion the API server refuses is reported as a FailedDelete warning, as Kubernetes'
// pod control does; a pod already gone is not.
func TestFailedDeletionIsReported(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"), daemonPod(ds, "first", "n1"), daemonPod(ds, "second", "n1", newer))
	fx.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd unavailable"))
	})
	if err := fx.c.sync(context.Background(), "ns/agent"); err == nil {
		t.Fatal("sync succeeded though the deletion failed")
	}
	got := controllertest.Events(fx.rec.Events)
	if len(got) != 1 || !strings.HasPrefix(got[0], "Warning FailedDelete Error deleting: ") {
		t.Fatalf("events %v, want one FailedDelete warning", got)
	}
}

// An orphan pod the DaemonSet selects wakes it to adopt the pod, as in Kubernetes: when it
// appears, and when its labels or controller reference change (a released pod relabelled back,
// a reference removed by hand); a pod with another controller does not.
func TestOrphanPodsWakeSelectingDaemonSet(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"))
	queued := fx.drainQueue
	queued()
	orphan := daemonPod(ds, "orphan", "n1", func(p *corev1.Pod) { p.OwnerReferences = nil })
	fx.c.podChanged(orphan, true, false)
	if !queued() {
		t.Error("an added orphan pod did not wake the DaemonSet selecting it")
	}
	owned := daemonPod(ds, "owned", "n1")
	released := orphan.DeepCopy()
	released.ResourceVersion = "2"
	fx.c.podUpdated(owned, released)
	if !queued() {
		t.Error("a pod whose controller reference was removed did not wake the DaemonSet")
	}
	unlabelled := daemonPod(ds, "x", "n1", func(p *corev1.Pod) { p.OwnerReferences = nil; p.Labels = map[string]string{"app": "other"} })
	relabelled := daemonPod(ds, "x", "n1", func(p *corev1.Pod) { p.OwnerReferences = nil; p.ResourceVersion = "2" })
	fx.c.podUpdated(unlabelled, relabelled)
	if !queued() {
		t.Error("an orphan relabelled to match did not wake the DaemonSet")
	}
	other := daemonPod(ds, "other", "n1", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "uid-other" })
	fx.c.podChanged(other, true, false)
	if queued() {
		t.Error("a pod of another controller woke the DaemonSet")
	}
}

// A new ControllerRevision carries the DaemonSet's annotations, as in Kubernetes, so kubectl
// rollout history shows each revision's kubernetes.io/change-cause.
func TestRevisionCarriesChangeCause(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Annotations = map[string]string{"kubernetes.io/change-cause": "kubectl set image ds/agent c=agent:2"}
	})
	fx := newFixture(t, ds, newNode("n1"))
	fx.sync(t)
	created := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions")
	if len(created) != 1 {
		t.Fatalf("%d revisions created", len(created))
	}
	rev := created[0].(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision)
	if got := rev.Annotations["kubernetes.io/change-cause"]; got != "kubectl set image ds/agent c=agent:2" {
		t.Fatalf("revision change-cause %q, annotations %v", got, rev.Annotations)
	}
}

// Excess pods on a node are pruned as Kubernetes does. Without surge the oldest pod stays,
// whatever its revision. With surge a node keeps its oldest current and oldest old pod, and the
// old one goes as soon as it is not ready (nothing to protect) or the current one is available.
func TestExcessPodsOnNodePrunedAsUpstream(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType })
	fx := newFixture(t, ds, newNode("n1"),
		daemonPod(ds, "old", "n1", oldRevision), daemonPod(ds, "new", "n1", newer))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("without surge deleted %v, want the younger pod", got)
	}

	surge := newDS(func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	})
	fx = newFixture(t, surge, newNode("n1"),
		daemonPod(surge, "old", "n1", oldRevision, notReady), daemonPod(surge, "new", "n1", notReady, newer))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("surge: deleted %v, want the old pod that is not ready", got)
	}

	fx = newFixture(t, surge, newNode("n1"),
		daemonPod(surge, "old", "n1", oldRevision), daemonPod(surge, "new-a", "n1", notReady, newer),
		daemonPod(surge, "new-b", "n1", notReady, newer))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"new-b"}) {
		t.Fatalf("surge: deleted %v, want only the second current pod (the available old one serves)", got)
	}
}

// A pod labelled with the DaemonSet's current template generation runs the current template
// even when its revision hash differs (the revision was renamed after a hash collision, or made
// by an older controller), so, as in Kubernetes, it is counted updated and not rolled again.
func TestPodOfCurrentTemplateGenerationIsUpdated(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "4"}
	})
	gen := func(g string) podOpt {
		return func(p *corev1.Pod) { p.Labels[templateGenerationLabel] = g }
	}
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"),
		daemonPod(ds, "same", "n1", oldRevision, gen("4")), daemonPod(ds, "stale", "n2", oldRevision, gen("3")))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"stale"}) {
		t.Fatalf("deleted %v, want only the pod of the older template generation", got)
	}
	if st := fx.status(t); st.UpdatedNumberScheduled != 1 {
		t.Errorf("updatedNumberScheduled %d, want 1", st.UpdatedNumberScheduled)
	}
}

// A node that keeps its daemon pod but would no longer get one (an untolerated NoSchedule taint
// came later) takes part in a rolling update, as in Kubernetes: its old pod is removed within
// maxUnavailable and not replaced, rather than running the old template for good. With surge the
// removal waits until more nodes have an available pod than should run one, and an old pod there
// that is not available goes at once.
func TestRollingUpdateRetiresOldPodsOfNodesThatNoLongerFit(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"), newNode("n2", taint("later", corev1.TaintEffectNoSchedule)),
		daemonPod(ds, "p1", "n1"), daemonPod(ds, "o2", "n2", oldRevision))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"o2"}) {
		t.Fatalf("deleted %v, want the old pod of the tainted node", got)
	}
	if got := fx.createdOn(); len(got) != 0 {
		t.Fatalf("created on %v", got)
	}

	surge := newDS(func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	})
	fx = newFixture(t, surge, newNode("n1"), newNode("n2", taint("later", corev1.TaintEffectNoSchedule)),
		newNode("n3", taint("later", corev1.TaintEffectNoSchedule)), newNode("n4", taint("later", corev1.TaintEffectNoSchedule)),
		daemonPod(surge, "p1", "n1"), daemonPod(surge, "o2", "n2", oldRevision),
		daemonPod(surge, "o3", "n3", oldRevision, notReady), daemonPod(surge, "o4", "n4", oldRevision))
	fx.sync(t)
	// Three nodes have an available pod and one should run it: two old ones may go.
	if got := fx.deleted(); !slices.Equal(got, []string{"o2", "o3", "o4"}) {
		t.Fatalf("surge: deleted %v, want o3 (not available) and the available o2 and o4", got)
	}

	fx = newFixture(t, surge, newNode("n1"), newNode("n2", taint("later", corev1.TaintEffectNoSchedule)),
		daemonPod(surge, "p1", "n1", notReady), daemonPod(surge, "o2", "n2", oldRevision))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("surge: deleted %v while the only node that should run the pod has none available", got)
	}
}

// Status counts a node's pods as Kubernetes does: all but finished pods already being deleted,
// judging the node by its oldest pod. A surge rollout is not reported done while an old pod is
// still terminating, and a node whose only pod failed still has a pod scheduled.
func TestStatusCountsTerminatingAndFailedPods(t *testing.T) {
	surge := newDS(func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	})
	fx := newFixture(t, surge, newNode("n1"), newNode("n2"),
		daemonPod(surge, "old", "n1", oldRevision, terminating), daemonPod(surge, "new", "n1", newer),
		daemonPod(surge, "broken", "n2", failed, notReady, oldRevision),
		daemonPod(surge, "gone", "n2", failed, terminating))
	fx.c.exp.ExpectCreations("ns/agent", 1) // status only
	fx.sync(t)
	st := fx.status(t)
	if st.DesiredNumberScheduled != 2 || st.CurrentNumberScheduled != 2 || st.UpdatedNumberScheduled != 0 ||
		st.NumberReady != 1 || st.NumberAvailable != 1 || st.NumberUnavailable != 1 {
		t.Fatalf("status %+v: want desired 2, current 2 (the failed pod counts), updated 0 (n1's old pod is still terminating), ready/available 1", st)
	}
}

// A DaemonSet deleted and created again under the same name, seen as one update, does not
// inherit the old one's pending expectations, as in Kubernetes.
func TestRecreatedDaemonSetStartsWithoutOldExpectations(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds)
	fx.c.exp.ExpectCreations("ns/agent", 3)
	again := ds.DeepCopy()
	again.UID = "uid-agent-2"
	fx.c.dsUpdated(ds, again)
	if !fx.c.exp.Satisfied("ns/agent") {
		t.Fatal("the recreated DaemonSet waits for the old one's creations")
	}
}

// A finished pod on a node the DaemonSet no longer fits is deleted with the node's other pods,
// without a SucceededDaemonPod event, as in Kubernetes.
func TestSucceededPodOnUnfitNodeNotReported(t *testing.T) {
	ds := newDS(selecting("role", "edge"))
	fx := newFixture(t, ds, newNode("n1"),
		daemonPod(ds, "done", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("deleted %v", got)
	}
	if got := controllertest.Events(fx.rec.Events); slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, ReasonSucceededDaemonPod) }) {
		t.Fatalf("events %v", got)
	}
}

// A DaemonSet deleted with --cascade=orphan leaves its ControllerRevisions without an owner; one
// created again with the same selector adopts them, as in Kubernetes, instead of failing for
// good to create the revision of its template under the name an orphan already holds.
func TestOrphanedRevisionsAreAdopted(t *testing.T) {
	ds := newDS()
	hash := revision.Hash(&ds.Spec.Template, nil)
	data, err := revision.Data(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	orphan := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + hash, Namespace: "ns", ResourceVersion: "1",
			Labels: map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash}},
		Data: runtime.RawExtension{Raw: data}, Revision: 4,
	}
	fx := newFixture(t, ds, newNode("n1"), orphan, daemonPod(ds, "a", "n1"))
	_ = fx.c.sync(context.Background(), "ns/agent") // adopts; the cache has yet to see it
	rev, err := fx.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), orphan.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(rev); ref == nil || ref.UID != ds.UID {
		t.Fatalf("revision owner references %v, want the DaemonSet as controller", rev.OwnerReferences)
	}
	if err := fx.revs.Update(rev); err != nil {
		t.Fatal(err)
	}
	fx.sync(t)
	if st := fx.status(t); st.UpdatedNumberScheduled != 1 {
		t.Errorf("status %+v", st)
	}
}

// A ControllerRevision's changes wake the DaemonSet controlling it (one deleted by hand is made
// again), and an orphan's wake the DaemonSets selecting it, as in Kubernetes.
func TestRevisionEventsWakeDaemonSet(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds)
	for _, tc := range []struct {
		name string
		rev  *appsv1.ControllerRevision
		want bool
	}{
		{"owned", ownedRevision("r1", 1), true},
		{"orphan", &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns", Labels: map[string]string{"app": "agent"}}}, true},
		{"other", &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "ns", Labels: map[string]string{"app": "other"}}}, false},
	} {
		fx.c.revisionChanged(tc.rev)
		got := fx.c.queue.Len() > 0
		for fx.c.queue.Len() > 0 {
			k, _ := fx.c.queue.Get()
			fx.c.queue.Done(k)
		}
		if got != tc.want {
			t.Errorf("%s revision: woke the DaemonSet %v, want %v", tc.name, got, tc.want)
		}
	}
}

// As in Kubernetes, the rolling update takes its step only in a sync whose creations and
// deletions have nothing outstanding, so it never judges availability from pods that sync is
// still creating or deleting.
func TestRollingUpdateWaitsForManageToSettle(t *testing.T) {
	ds := newDS(maxUnavail(intstr.FromInt32(3)))
	broken := daemonPod(ds, "broken", "n2", failed)
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), newNode("n3"), newNode("n4"),
		broken, daemonPod(ds, "o3", "n3", oldRevision), daemonPod(ds, "o4", "n4", oldRevision))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("created on %v, want n1", got)
	}
	if got := fx.deleted(); !slices.Equal(got, []string{"broken"}) {
		t.Fatalf("deleted %v, want only the failed pod until the creation and deletion are seen", got)
	}
}

// templateRevision is an owned ControllerRevision holding tmpl, with the given hash label and number.
func templateRevision(t *testing.T, hash string, tmpl *corev1.PodTemplateSpec, n int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revision.Data(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	r := ownedRevision(hash, n)
	r.ResourceVersion = "1"
	r.Data = runtime.RawExtension{Raw: data}
	return r
}

func withHash(h string) podOpt {
	return func(p *corev1.Pod) { p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = h }
}

// A template rolled back to keeps the revision it had, found by its data as Kubernetes does, even
// when a collision count raised since would name a new revision of it differently: the revision is
// renumbered as the newest and its pods are up to date, rather than a duplicate revision being
// made and every pod rolled again.
func TestRollbackAfterCollisionReusesRevision(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Status.CollisionCount = ptr(int32(1)) })
	a := revision.Hash(&ds.Spec.Template, nil)
	other := ds.Spec.Template.DeepCopy()
	other.Spec.Containers[0].Image = "agent:2"
	fx := newFixture(t, ds, newNode("n1"),
		templateRevision(t, a, &ds.Spec.Template, 1), templateRevision(t, "b", other, 2),
		daemonPod(ds, "p1", "n1", withHash(a)))
	fx.sync(t)
	if got := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions"); len(got) != 0 {
		t.Fatalf("created %d revisions, want the existing one reused", len(got))
	}
	updates := controllertest.Filter(fx.client.Actions(), "update", "controllerrevisions")
	if len(updates) != 1 {
		t.Fatalf("%d revision updates, want 1", len(updates))
	}
	if r := updates[0].(k8stesting.UpdateAction).GetObject().(*appsv1.ControllerRevision); r.Name != "agent-"+a || r.Revision != 3 {
		t.Fatalf("updated %s to revision %d, want agent-%s to 3", r.Name, r.Revision, a)
	}
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v, want the pod of the rolled-back template kept", got)
	}
	if st := fx.status(t); st.UpdatedNumberScheduled != 1 {
		t.Errorf("status %+v, want the pod counted updated", st)
	}
}

// Several revisions holding the current template are reduced to the newest, as in Kubernetes:
// the others' pods are relabelled with its hash and the duplicates deleted.
func TestDuplicateRevisionsRemoved(t *testing.T) {
	ds := newDS()
	other := ds.Spec.Template.DeepCopy()
	other.Spec.Containers[0].Image = "agent:2"
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"),
		templateRevision(t, "x", &ds.Spec.Template, 1), templateRevision(t, "z", other, 2),
		templateRevision(t, "y", &ds.Spec.Template, 3),
		daemonPod(ds, "p1", "n1", withHash("x")), daemonPod(ds, "p2", "n2", withHash("y")))
	fx.sync(t)
	if got := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions"); len(got) != 0 {
		t.Fatalf("created %d revisions", len(got))
	}
	var gone []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		gone = append(gone, a.(k8stesting.DeleteAction).GetName())
	}
	if !slices.Equal(gone, []string{"agent-x"}) {
		t.Fatalf("deleted revisions %v, want the duplicate agent-x", gone)
	}
	patches := controllertest.Filter(fx.client.Actions(), "patch", "pods")
	if len(patches) != 1 || patches[0].(k8stesting.PatchAction).GetName() != "p1" ||
		!strings.Contains(string(patches[0].(k8stesting.PatchAction).GetPatch()), `"y"`) {
		t.Fatalf("pod patches %v, want p1 relabelled y", patches)
	}
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted pods %v, want both kept (both run the current template)", got)
	}
}

// A node whose daemon pod is still terminating counts against maxUnavailable in a rolling update,
// as in Kubernetes, even when the DaemonSet no longer fits the node or the node is gone: every
// node with a daemon pod takes part, not only those that should run one.
func TestRollingUpdateCountsTerminatingPodsOnAnyNode(t *testing.T) {
	ds := newDS(selecting("role", "edge"))
	edge := func() []runtime.Object {
		return []runtime.Object{ds, newNode("n1", label("role", "edge")), newNode("n2", label("role", "edge")),
			daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "o2", "n2", oldRevision)}
	}
	for _, tc := range []struct {
		name  string
		extra []runtime.Object
	}{
		{"on a node the DaemonSet no longer fits", []runtime.Object{newNode("x"), daemonPod(ds, "leaving", "x", oldRevision, terminating)}},
		{"on a node that is gone", []runtime.Object{daemonPod(ds, "leaving", "gone", oldRevision, terminating)}},
	} {
		fx := newFixture(t, append(edge(), tc.extra...)...)
		fx.sync(t)
		if got := fx.deleted(); len(got) != 0 {
			t.Errorf("%s: deleted %v while a pod terminates, want none (maxUnavailable 1)", tc.name, got)
		}
	}
	// Once it is gone, the update goes on.
	fx := newFixture(t, edge()...)
	fx.sync(t)
	if got := fx.deleted(); len(got) != 1 {
		t.Errorf("deleted %v, want one old pod", got)
	}
}

// Node events wake only the DaemonSets they concern, as in Kubernetes: a new node those whose pod
// should run on it, an update those whose placement on it changed; one that changes neither labels
// nor taints (a status heartbeat) wakes none.
func TestNodeEventsWakeOnlyAffectedDaemonSets(t *testing.T) {
	fx := newFixture(t, newDS(selecting("role", "edge")))
	queued := fx.drainQueue
	queued()
	edge := newNode("e1", label("role", "edge"))
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Node
		want     bool
	}{
		{"a node it does not fit added", nil, newNode("x1"), false},
		{"a node it fits added", nil, edge, true},
		{"a status heartbeat", edge, func() *corev1.Node {
			n := edge.DeepCopy()
			n.ResourceVersion = "2"
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			return n
		}(), false},
		{"a label it does not select", edge, newNode("e1", label("role", "edge"), label("zone", "a")), false},
		{"the label it selects added", newNode("e1"), edge, true},
		{"an untolerated taint added", edge, newNode("e1", label("role", "edge"), taint("dedicated", corev1.TaintEffectNoSchedule)), true},
		{"a tolerated taint added", edge, newNode("e1", label("role", "edge"), taint(taintDiskPressure, corev1.TaintEffectNoSchedule)), false},
	} {
		if tc.old == nil {
			fx.c.nodeAdded(tc.cur)
		} else {
			fx.c.nodeUpdated(tc.old, tc.cur)
		}
		if got := queued(); got != tc.want {
			t.Errorf("%s: woke the DaemonSet %v, want %v", tc.name, got, tc.want)
		}
	}
}

// drainQueue empties the controller's queue and says whether anything was queued.
func (fx *fixture) drainQueue() bool {
	n := fx.c.queue.Len()
	for fx.c.queue.Len() > 0 {
		k, _ := fx.c.queue.Get()
		fx.c.queue.Done(k)
	}
	return n > 0
}

func surging(maxSurge intstr.IntOrString) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		zero := intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &maxSurge, MaxUnavailable: &zero}
	}
}

// A rolling update with maxSurge judges each node as Kubernetes' does, counting a failed pod its
// back-off keeps on the node and the pods of nodes that are gone: a failed current pod beside an
// old one is a surge that has not become available, so it uses up the budget rather than a second
// current pod being started beside it; a failed old pod is replaced at once; an unavailable
// current pod on a node that is gone still holds its share of the budget.
func TestSurgeCountsFailedPodsAndPodsOfGoneNodes(t *testing.T) {
	ds := newDS(surging(intstr.FromInt32(1)))
	for _, tc := range []struct {
		name        string
		objs        []runtime.Object
		backoffNode string // a node whose failed pod waits out its back-off
		wantCreated []string
		wantDeleted []string
	}{
		{
			name: "failed current pod beside an old one",
			objs: []runtime.Object{newNode("n1"), newNode("n2"),
				daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "f1", "n1", failed, notReady, newer),
				daemonPod(ds, "o2", "n2", oldRevision)},
			backoffNode: "n1",
		},
		{
			name: "failed old pod",
			objs: []runtime.Object{newNode("n1"), newNode("n2"),
				daemonPod(ds, "f1", "n1", oldRevision, failed, notReady), daemonPod(ds, "o2", "n2", oldRevision)},
			backoffNode: "n1",
			// manage replaces it, so the update's surge on n2 waits for that creation to be seen.
			wantCreated: []string{"n1"},
		},
		{
			name: "failed old pod beside an available current one",
			objs: []runtime.Object{newNode("n1"),
				daemonPod(ds, "f1", "n1", oldRevision, failed, notReady), daemonPod(ds, "p1", "n1", newer)},
			backoffNode: "n1",
			wantDeleted: []string{"f1"},
		},
		{
			name: "surge in flight on a node that is gone",
			objs: []runtime.Object{newNode("n1"),
				daemonPod(ds, "o1", "n1", oldRevision),
				daemonPod(ds, "og", "gone", oldRevision), daemonPod(ds, "pg", "gone", notReady, newer)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{ds}, tc.objs...)...)
			if tc.backoffNode != "" {
				fx.c.failedBackoff.Next(failedBackoffKey(ds, tc.backoffNode), now)
			}
			fx.sync(t)
			if got := fx.createdOn(); !slices.Equal(got, tc.wantCreated) {
				t.Errorf("created on %v, want %v", got, tc.wantCreated)
			}
			if got := fx.deleted(); !slices.Equal(got, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tc.wantDeleted)
			}
		})
	}
}

// maxSurge is resolved against the nodes that should run the pod, as in Kubernetes: a percentage
// of none is no surge, so old pods left on nodes that no longer fit (a NoSchedule taint came
// later) are retired within maxUnavailable (here none) rather than all at once.
func TestSurgePercentOfNoNodesIsNoSurge(t *testing.T) {
	ds := newDS(surging(intstr.FromString("50%")))
	fx := newFixture(t, ds,
		newNode("n1", taint("later", corev1.TaintEffectNoSchedule)), newNode("n2", taint("later", corev1.TaintEffectNoSchedule)),
		daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "o2", "n2", oldRevision))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v, want the old pods kept (maxUnavailable 0)", got)
	}
}

// A finished pod already being deleted but kept by a finalizer (the template's, or one a
// webhook or a volume plugin added) has nothing left to stop on its node: as in Kubernetes
// (getNodesToDaemonPods without deleted terminal pods), the node gets its replacement at once
// rather than waiting, without surge, for a pod that may never go away.
func TestDeletedFinishedPodDoesNotHoldUpReplacement(t *testing.T) {
	ds := newDS()
	held := func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"),
		daemonPod(ds, "broken", "n1", failed, terminating, held),
		daemonPod(ds, "done", "n2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, terminating, held))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("created on %v, want n1 and n2 whose only pods are finished and being deleted", got)
	}
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v, want nothing: the finished pods are already being deleted", got)
	}
}

// Every template toleration standing in for a default daemon toleration is replaced, not just
// the first: the taint manager evicts at the shortest tolerationSeconds of the matching
// tolerations, so a second copy with one would still get daemon pods evicted from not-ready
// nodes. With no copy equal to the default already, as here, this is what Kubernetes'
// AddOrUpdateTolerationInPodSpec does. When one is, Kubernetes leaves all of them untouched
// while skiff still replaces the others (never evicting sooner): a deliberate difference (see
// addDaemonTolerations), not parity.
func TestEveryTolerationStandingInForADefaultIsReplaced(t *testing.T) {
	secs := int64(300)
	spec := corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: "other", Operator: corev1.TolerationOpExists},
		{Key: taintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
	}}
	addDaemonTolerations(&spec)
	for _, tol := range spec.Tolerations {
		if tol.Key == taintNotReady && tol.TolerationSeconds != nil {
			t.Fatalf("tolerations %+v: a not-ready toleration kept tolerationSeconds", spec.Tolerations)
		}
	}
	if spec.Tolerations[1].Key != "other" {
		t.Errorf("tolerations %+v: others must stay in place", spec.Tolerations)
	}
}

type afterQueue struct {
	runner.Queue
	after []time.Duration
}

func (q *afterQueue) AddAfter(key string, d time.Duration) { q.after = append(q.after, d) }

// A ready pod turns available by time alone, with no event to wake the controller; as in
// Kubernetes (updateDaemonSetStatus), a sync that leaves ready pods not yet available looks
// again, here when the first one's minReadySeconds are up. Otherwise numberAvailable stays low
// (and kubectl rollout status waits) after minReadySeconds is raised on running pods.
func TestStatusLooksAgainWhenAReadyPodTurnsAvailable(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = 120 })
	readySince := func(d time.Duration) podOpt {
		return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
	}
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"), newNode("n3"),
		daemonPod(ds, "a", "n1", readySince(90*time.Second)),
		daemonPod(ds, "b", "n2", readySince(60*time.Second)),
		daemonPod(ds, "c", "n3", readySince(time.Hour)))
	q := &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if st := fx.status(t); st.NumberReady != 3 || st.NumberAvailable != 1 {
		t.Fatalf("status %+v, want 3 ready and 1 available", st)
	}
	if !slices.Contains(q.after, 30*time.Second) {
		t.Fatalf("requeued after %v, want 30s (when a, ready 90s ago, becomes available)", q.after)
	}

	// Every pod available: nothing to wait for.
	fx = newFixture(t, ds, newNode("n1"), daemonPod(ds, "c", "n1", readySince(time.Hour)))
	q = &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if len(q.after) != 0 {
		t.Fatalf("requeued after %v with every pod available", q.after)
	}
}

// With maxSurge, a node whose only daemon pods are finished gets a replacement at once, beside
// them, as Kubernetes' podsShouldBeOnNode does (surging, a node needs one pod that has not
// finished): a failed pod still in its back-off stays until the back-off ends, one out of it is
// deleted in the same sync. Without surge the replacement waits for the finished pod to go.
func TestSurgeReplacesFinishedPodsAtOnce(t *testing.T) {
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	for _, tc := range []struct {
		name        string
		surge       bool
		pod         podOpt
		inBackoff   bool
		wantCreated []string
		wantDeleted []string
	}{
		{"surge: a failed pod in its back-off", true, failed, true, []string{"n1"}, nil},
		{"surge: a failed pod out of its back-off", true, failed, false, []string{"n1"}, []string{"f1"}},
		{"surge: a succeeded pod", true, succeeded, false, []string{"n1"}, []string{"f1"}},
		{"no surge: a failed pod in its back-off", false, failed, true, nil, nil},
		{"no surge: a failed pod out of its back-off", false, failed, false, nil, []string{"f1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS()
			if tc.surge {
				ds = newDS(surging(intstr.FromInt32(1)))
			}
			fx := newFixture(t, ds, newNode("n1"), daemonPod(ds, "f1", "n1", tc.pod, notReady))
			if tc.inBackoff {
				fx.c.failedBackoff.Next(failedBackoffKey(ds, "n1"), now)
			}
			fx.sync(t)
			if got := fx.createdOn(); !slices.Equal(got, tc.wantCreated) {
				t.Errorf("created on %v, want %v", got, tc.wantCreated)
			}
			if got := fx.deleted(); !slices.Equal(got, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tc.wantDeleted)
			}
		})
	}
}

// A status write that fails (a conflict: the DaemonSet changed since the cache saw it) is tried
// once more on a fresh read of the DaemonSet, as Kubernetes' storeDaemonSetStatus does with
// StatusUpdateRetries, so the counts land in this sync and the change made meanwhile is kept;
// a second failure is the sync's error and the key is retried with back-off.
func TestStatusWriteRetriedOnceOnAFreshRead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refusals   int32
		wantWrites int32
		wantErr    bool
	}{
		{"one conflict", 1, 2, false},
		{"two conflicts", 2, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS()
			fx := newFixture(t, ds, newNode("n1"), daemonPod(ds, "p1", "n1"))
			edited := ds.DeepCopy()
			edited.Labels = map[string]string{"edited": "meanwhile"}
			if _, err := fx.client.AppsV1().DaemonSets("ns").Update(context.Background(), edited, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, ds.Name, errors.New("the object has been modified"))
			writes := controllertest.RefuseFirst(fx.client, "update", "daemonsets", tc.refusals, conflict)
			fx.client.ClearActions()
			err := fx.c.sync(context.Background(), "ns/agent")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want an error: %v", err, tc.wantErr)
			}
			if got := writes.Load(); got != tc.wantWrites {
				t.Errorf("%d status writes, want %d", got, tc.wantWrites)
			}
			if got := len(controllertest.Filter(fx.client.Actions(), "get", "daemonsets")); got != 1 {
				t.Errorf("%d reads of the daemonset, want 1", got)
			}
			if tc.wantErr {
				return
			}
			got, err := fx.client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.DesiredNumberScheduled != 1 || got.Status.ObservedGeneration != ds.Generation || got.Labels["edited"] != "meanwhile" {
				t.Errorf("stored %+v with labels %v, want the counts, observedGeneration %d and the edit kept", got.Status, got.Labels, ds.Generation)
			}
		})
	}
}
