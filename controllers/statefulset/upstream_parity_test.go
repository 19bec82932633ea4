package statefulset

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/runner"
)

func startAt(n int32) setOpt {
	return func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: n} }
}

// named is member with an explicit ordinal (member only handles 0-9).
func named(set *appsv1.StatefulSet, ordinal int, rev string, opts ...podOpt) *corev1.Pod {
	p := member(set, 0, rev, opts...)
	p.Name = podFor(set, ordinal, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: rev}}, &set.Spec.Template).Name
	p.UID = types.UID("uid-" + p.Name)
	return p
}

// spec.ordinals.start (GA in Kubernetes 1.31) numbers the pods start … start+replicas-1.
func TestOrdinalsStart(t *testing.T) {
	set := newSet(2, startAt(5), claimTemplates)
	fx := newFixture(t, set)
	fx.sync(t)
	pods := fx.created()
	if !slices.Equal(names(pods), []string{"web-5"}) {
		t.Fatalf("created %v, want web-5 first", names(pods))
	}
	if p := pods[0]; p.Labels[podIndexLabel] != "5" || p.Labels[podNameLabel] != "web-5" || p.Spec.Hostname != "web-5" ||
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-5" {
		t.Errorf("pod identity: labels %v hostname %s volumes %+v", p.Labels, p.Spec.Hostname, p.Spec.Volumes)
	}

	// web-5 ready: web-6 next; web-0 (below start) is condemned once the range is healthy.
	rev := pods[0].Labels[appsv1.ControllerRevisionHashLabelKey]
	fx = newFixture(t, set, named(set, 0, rev), named(set, 5, rev))
	fx.sync(t)
	if got := names(fx.created()); !slices.Equal(got, []string{"web-6"}) {
		t.Fatalf("created %v, want web-6", got)
	}
	fx = newFixture(t, set, named(set, 0, rev), named(set, 5, rev), named(set, 6, rev))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("deleted %v, want web-0 (outside the ordinal range)", got)
	}
	if st := fx.status(t); st.Replicas != 3 || st.ReadyReplicas != 3 {
		t.Errorf("status: %+v", st)
	}
}

// The partition counts from spec.ordinals.start.
func TestOrdinalsStartPartition(t *testing.T) {
	set := newSet(3, startAt(10), partition(1))
	old := revisionFor(t, set, "web:1", 1)
	update := revisionFor(t, set, "web:2", 2)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, update, named(set, 10, old.Name), named(set, 11, update.Name), named(set, 12, update.Name))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v below the partition", got)
	}
	fx = newFixture(t, set, old, update, named(set, 10, old.Name), named(set, 12, update.Name))
	fx.sync(t)
	pods := fx.created()
	if len(pods) != 1 || pods[0].Name != "web-11" || pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] != update.Name {
		t.Fatalf("created %v, want web-11 at the update revision", names(pods))
	}
}

// A pod that ended Succeeded (e.g. stopped by a node shutdown with exit code 0) is deleted and
// recreated, as a failed one is.
func TestSucceededPodIsReplaced(t *testing.T) {
	for _, opt := range []setOpt{func(*appsv1.StatefulSet) {}, parallel} {
		set := newSet(2, opt)
		rev := revisionFor(t, set, "web:2", 1)
		fx := newFixture(t, set, rev, member(set, 0, rev.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), member(set, 1, rev.Name))
		fx.sync(t)
		if got := fx.deleted(); !slices.Equal(got, []string{"web-0"}) {
			t.Fatalf("%s: deleted %v, want web-0", set.Spec.PodManagementPolicy, got)
		}
	}
}

// Under Parallel, Kubernetes rolls pods from the highest ordinal down even while a lower pod is
// unhealthy, so a template fixing crash-looping pods gets rolled out.
func TestParallelRollingUpdateProceedsPastUnhealthyPods(t *testing.T) {
	set := newSet(3, parallel)
	old := revisionFor(t, set, "web:1", 1)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, member(set, 0, old.Name, notReady), member(set, 1, old.Name, notReady), member(set, 2, old.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-2"}) {
		t.Fatalf("deleted %v, want web-2", got)
	}
	// web-2 updated but not ready yet: wait for it.
	update := revisionFor(t, set, "web:2", 2)
	fx = newFixture(t, set, old, update, member(set, 0, old.Name, notReady), member(set, 1, old.Name, notReady), member(set, 2, update.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while web-2 is not ready", got)
	}
	// web-2 ready: web-1 next.
	fx = newFixture(t, set, old, update, member(set, 0, old.Name, notReady), member(set, 1, old.Name, notReady), member(set, 2, update.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1"}) {
		t.Fatalf("deleted %v, want web-1", got)
	}
}

// Under Parallel, Kubernetes scales down and rolls the update in the same pass.
func TestParallelScaleDownAndUpdateTogether(t *testing.T) {
	set := newSet(2, parallel)
	old := revisionFor(t, set, "web:1", 1)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, member(set, 0, old.Name), member(set, 1, old.Name), member(set, 2, old.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Fatalf("deleted %v, want web-2 (scale-down) and web-1 (update) at once", got)
	}
}

// A claim deleted while its pod is still Pending is made again, as in
// Kubernetes; a running pod's missing claim is left alone.
func TestPendingPodsMissingClaimIsRecreated(t *testing.T) {
	set := newSet(2, parallel, claimTemplates)
	rev := revisionFor(t, set, "web:2", 1)
	pending := member(set, 0, rev.Name, func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} })
	fx := newFixture(t, set, rev, pending, member(set, 1, rev.Name))
	fx.sync(t)
	var made []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "create", "persistentvolumeclaims") {
		made = append(made, a.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim).Name)
	}
	if !slices.Equal(made, []string{"data-web-0"}) {
		t.Errorf("claims created %v, want data-web-0 for the pending pod only", made)
	}
}

// A set deleted with --cascade=orphan and made again finds its revisions
// without a controller; as in Kubernetes it adopts them (otherwise the
// revision of its template, under the same name, could never be made again
// and the set would be stuck).
func TestOrphanRevisionsAreAdopted(t *testing.T) {
	set := newSet(1)
	orphan := revisionFor(t, set, "web:2", 1)
	orphan.OwnerReferences = nil
	orphan.Labels["app"] = "web" // revisions carry the template's labels
	other := revisionFor(t, set, "web:0", 1)
	other.Name, other.Labels = "db-abc", map[string]string{"app": "db"}
	other.OwnerReferences = nil
	fx := newFixture(t, set, orphan, other)
	fx.sync(t) // the revision it adopts is found by its data before the cache sees the adoption
	var adopted []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "patch", "controllerrevisions") {
		pa := a.(k8stesting.PatchAction)
		if !strings.Contains(string(pa.GetPatch()), `"kind":"StatefulSet"`) {
			t.Errorf("patch of %s: %s, want the set as owner", pa.GetName(), pa.GetPatch())
		}
		adopted = append(adopted, pa.GetName())
	}
	if !slices.Equal(adopted, []string{orphan.Name}) {
		t.Fatalf("adopted %v, want %s (matching the selector) only", adopted, orphan.Name)
	}
	rev, err := fx.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), orphan.Name, metav1.GetOptions{})
	if err != nil || metav1.GetControllerOf(rev) == nil || metav1.GetControllerOf(rev).UID != set.UID {
		t.Fatalf("revision after sync: %+v, %v", rev, err)
	}
}

// As in Kubernetes, a pod matching the selector but not named <set>-<n> is
// not adopted (it would be deleted with the set), and one the set controls
// under such a name is released.
func TestOnlyMembersAreAdopted(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	stranger := member(set, 0, rev.Name)
	stranger.Name, stranger.UID, stranger.OwnerReferences = "debug", "uid-debug", nil
	owned := member(set, 0, rev.Name)
	owned.Name, owned.UID = "web-x", "uid-web-x"
	orphan := member(set, 0, rev.Name)
	orphan.OwnerReferences = nil
	fx := newFixture(t, set, rev, stranger, owned, orphan)
	fx.sync(t)
	patches := map[string]string{}
	for _, a := range controllertest.Filter(fx.client.Actions(), "patch", "pods") {
		pa := a.(k8stesting.PatchAction)
		patches[pa.GetName()] = string(pa.GetPatch())
	}
	if _, ok := patches["debug"]; ok {
		t.Errorf("adopted debug: %s", patches["debug"])
	}
	if p, ok := patches["web-x"]; !ok || !strings.Contains(p, `"ownerReferences":[]`) {
		t.Errorf("web-x patch %q, want it released", p)
	}
	if p := patches["web-0"]; !strings.Contains(p, `"kind":"StatefulSet"`) {
		t.Errorf("web-0 patch %q, want it adopted", p)
	}
}

// Under whenScaled: Delete a claim still owned by an earlier pod of the same
// name (scaled down, the garbage collector not yet through) makes the new pod
// wait, as Kubernetes' PodClaimIsStale: created now, it would be left on a
// claim about to be deleted.
func TestStaleClaimBlocksPodCreation(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	yes := true
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-0", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "uid-old-web-0", Controller: &yes}}}}

	fx := newFixture(t, newSet(1, claimTemplates, retention(retain, del)), claim)
	if err := fx.c.sync(context.Background(), "ns/web"); err == nil || len(fx.created()) != 0 {
		t.Fatalf("sync err %v, created %v: want web-0 to wait for its old claim", err, names(fx.created()))
	}
	// Under whenScaled: Retain the claim is meant to be reused.
	fx = newFixture(t, newSet(1, claimTemplates, retention(retain, retain)), claim)
	fx.sync(t)
	if got := names(fx.created()); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("created %v, want web-0", got)
	}
}

// Kubernetes always reports status.collisionCount, 0 until a hash collision.
func TestStatusReportsCollisionCount(t *testing.T) {
	fx := newFixture(t, newSet(1))
	fx.sync(t)
	if st := fx.status(t); st.CollisionCount == nil || *st.CollisionCount != 0 {
		t.Fatalf("collisionCount %v, want 0", st.CollisionCount)
	}
}

type afterQueue struct {
	runner.Queue
	after []time.Duration
}

func (q *afterQueue) AddAfter(key string, d time.Duration) { q.after = append(q.after, d) }

// As in Kubernetes, a sync that leaves pods still to become available under
// minReadySeconds looks again, so a pod made available by time alone (no event) is
// not missed; skiff looks when the first such pod's window ends (Kubernetes after a
// whole minReadySeconds), so availableReplicas is on time.
func TestMinReadySecondsRequeue(t *testing.T) {
	set := newSet(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 120 })
	rev := revisionFor(t, set, "web:2", 1)
	readySince := func(d time.Duration) podOpt {
		return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d)) }
	}
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, readySince(90*time.Second)))
	q := &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if !slices.Equal(q.after, []time.Duration{30 * time.Second}) {
		t.Fatalf("requeued after %v, want 30s (when web-1, ready 90s ago, becomes available)", q.after)
	}
	// None ready yet: look again after minReadySeconds, as Kubernetes.
	fx = newFixture(t, set, rev, member(set, 0, rev.Name, notReady), member(set, 1, rev.Name, notReady))
	q = &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if !slices.Equal(q.after, []time.Duration{120 * time.Second}) {
		t.Fatalf("requeued after %v, want 2m", q.after)
	}
	set = newSet(1, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 30 }) // available now: nothing to wait for
	fx = newFixture(t, set, rev, member(set, 0, rev.Name))
	q = &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if len(q.after) != 0 {
		t.Fatalf("requeued after %v with every pod available", q.after)
	}
}

// As Kubernetes' updatePod, only a pod turning ready queues its set for minReadySeconds
// (and a second) later, when it becomes available; other pod events, which nothing
// follows with time, queue the set now and no more.
func TestMinReadySecondsPodEvents(t *testing.T) {
	set := newSet(1, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 10 })
	rev := revisionFor(t, set, "web:2", 1)
	for _, tc := range []struct {
		name      string
		event     func(c *Controller, pod *corev1.Pod)
		wantAfter []time.Duration
	}{
		{"added", func(c *Controller, pod *corev1.Pod) { c.podChanged(pod, true, false) }, nil},
		{"deleted", func(c *Controller, pod *corev1.Pod) { c.podChanged(pod, false, true) }, nil},
		{"relabelled while ready", func(c *Controller, pod *corev1.Pod) {
			cur := pod.DeepCopy()
			cur.ResourceVersion, cur.Labels["tier"] = "2", "db"
			c.podUpdated(pod, cur)
		}, nil},
		{"turned ready", func(c *Controller, pod *corev1.Pod) {
			old := pod.DeepCopy()
			notReady(old)
			pod = pod.DeepCopy()
			pod.ResourceVersion = "2"
			c.podUpdated(old, pod)
		}, []time.Duration{11 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := member(set, 0, rev.Name)
			fx := newFixture(t, set, rev, pod)
			q := &afterQueue{Queue: fx.c.queue}
			fx.c.queue = q
			tc.event(fx.c, pod)
			if !slices.Equal(q.after, tc.wantAfter) {
				t.Errorf("queued for later after %v, want %v", q.after, tc.wantAfter)
			}
			if q.Len() != 1 {
				t.Errorf("%d keys queued now, want the set's", q.Len())
			}
		})
	}
}

// A failed pod deletion is reported as Kubernetes does, with a FailedDelete warning.
func TestFailedDeleteEvent(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name))
	fx.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd unavailable")
	})
	if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync succeeded with the delete failing")
	}
	want := "Warning FailedDelete delete Pod web-1 in StatefulSet web failed error: etcd unavailable"
	for len(fx.rec.Events) > 0 {
		if e := <-fx.rec.Events; e == want {
			return
		}
	}
	t.Fatalf("no event %q", want)
}

func drainEvents(rec *record.FakeRecorder) []string {
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return out
}

// Claim events as v1.33's createPersistentVolumeClaims: none for a claim
// someone else made meanwhile, though the pod is held up (reported, and not
// created) until the next pass has looked at that claim; a failed claim,
// refused by quota or by a namespace being deleted, is reported for the claim
// and for the pod it holds up.
func TestClaimEvents(t *testing.T) {
	terminating := apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "data-web-0", errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"already exists", apierrors.NewAlreadyExists(corev1.Resource("persistentvolumeclaims"), "data-web-0"), []string{"FailedCreate create Pod"}},
		{"exceeded quota", apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "data-web-0", errors.New("exceeded quota")),
			[]string{"FailedCreate create Claim", "FailedCreate create Pod"}},
		{"namespace terminating", terminating, []string{"FailedCreate create Claim", "FailedCreate create Pod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newSet(1, claimTemplates))
			fx.client.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
				t.Fatal("sync succeeded with the claim create refused")
			}
			if n := len(fx.created()); n != 0 {
				t.Errorf("%d pods created, want the pod held up", n)
			}
			var reasons []string
			for _, e := range drainEvents(fx.rec) {
				f := strings.Fields(e)
				reasons = append(reasons, f[1]+" "+f[2]+" "+f[3])
			}
			if !slices.Equal(reasons, tc.want) {
				t.Fatalf("events %v, want %v", reasons, tc.want)
			}
		})
	}
}

// A set being deleted (foreground: it waits for its pods) makes and removes
// nothing, but its status goes on counting the pods, as in Kubernetes.
func TestDeletingSetKeepsStatusCurrent(t *testing.T) {
	set := newSet(3)
	rev := revisionFor(t, set, "web:2", 1)
	ts := metav1.NewTime(now)
	set.DeletionTimestamp, set.Finalizers = &ts, []string{metav1.FinalizerDeleteDependents}
	set.Status = appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3,
		CurrentRevision: rev.Name, UpdateRevision: rev.Name, ObservedGeneration: 2}
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, terminating))
	fx.sync(t)
	if got := len(fx.created()) + len(fx.deleted()); got != 0 {
		t.Fatalf("created %v, deleted %v for a set being deleted", names(fx.created()), fx.deleted())
	}
	if st := fx.status(t); st.Replicas != 2 || st.ReadyReplicas != 2 || st.CurrentReplicas != 1 || st.CurrentRevision != rev.Name {
		t.Fatalf("status %+v, want the two remaining pods counted", st)
	}
}

// As in Kubernetes a revision carries the set's annotations from when it was
// made: kubectl rollout history shows its kubernetes.io/change-cause.
func TestRevisionCarriesSetAnnotations(t *testing.T) {
	set := newSet(1)
	set.Annotations = map[string]string{"kubernetes.io/change-cause": "kubectl set image sts/web c=web:2"}
	fx := newFixture(t, set)
	fx.sync(t)
	creates := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions")
	if len(creates) != 1 {
		t.Fatalf("%d revisions made, want 1", len(creates))
	}
	rev := creates[0].(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision)
	if got := rev.Annotations["kubernetes.io/change-cause"]; got != set.Annotations["kubernetes.io/change-cause"] {
		t.Fatalf("revision change-cause %q, want the set's", got)
	}
}

// An orphan pod a set may adopt queues that set, as in Kubernetes.
func TestOrphanPodQueuesItsAdopter(t *testing.T) {
	set := newSet(1)
	orphan := member(set, 0, "r")
	orphan.OwnerReferences = nil
	stranger := orphan.DeepCopy()
	stranger.Name = "debug"
	fx := newFixture(t, set)
	fx.c.podChanged(stranger, true, false)
	if n := fx.c.queue.Len(); n != 0 {
		t.Fatalf("queue holds %d after a pod the set would not adopt", n)
	}
	fx.c.podChanged(orphan, true, false)
	if n := fx.c.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d, want ns/web for the orphan web-0", n)
	}
	if key, _ := fx.c.queue.Get(); key != "ns/web" {
		t.Fatalf("queued %q", key)
	}
}

// Under OrderedReady, as Kubernetes' processCondemned, a condemned pod that is
// not healthy is deleted only if it is the lowest unhealthy one; otherwise
// the scale-down waits for it.
func TestOrderedScaleDownWaitsForUnhealthyCondemnedPods(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, notReady), member(set, 2, rev.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while web-2 is unhealthy and web-1 is the first unhealthy pod", got)
	}
	// web-2 healthy: it goes first.
	fx = newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, notReady), member(set, 2, rev.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-2"}) {
		t.Fatalf("deleted %v, want web-2", got)
	}
	// web-1, the lowest unhealthy pod, goes though unhealthy.
	fx = newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1"}) {
		t.Fatalf("deleted %v, want web-1", got)
	}
	// Parallel does not wait.
	pset := newSet(1, parallel)
	fx = newFixture(t, pset, rev, member(pset, 0, rev.Name), member(pset, 1, rev.Name, notReady), member(pset, 2, rev.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Fatalf("parallel deleted %v", got)
	}
}

// queued drains the controller's queue.
func queued(c *Controller) []string {
	var keys []string
	for c.queue.Len() > 0 {
		key, _ := c.queue.Get()
		c.queue.Done(key)
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// As Kubernetes' updatePod, a pod whose controller reference changes wakes
// the set that controlled it as well as its new one: the old set must count
// the pod out (and may have to replace it) now, not at its next resync.
func TestPodChangingControllerQueuesTheOldSet(t *testing.T) {
	web, db := newSet(1), newSet(1)
	db.Name, db.UID = "db", "uid-db"
	old := member(web, 0, "r")
	taken := old.DeepCopy()
	taken.ResourceVersion = "2"
	yes := true
	taken.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: db.Name, UID: db.UID, Controller: &yes}}
	// Released and relabelled out of web's selector: nothing would adopt it.
	released := old.DeepCopy()
	released.ResourceVersion, released.Labels["app"] = "2", "debug"
	released.OwnerReferences = nil

	fx := newFixture(t, web, db)
	fx.c.podUpdated(old, taken)
	if got := queued(fx.c); !slices.Equal(got, []string{"ns/db", "ns/web"}) {
		t.Fatalf("queued %v after web-0 moved from web to db, want both sets", got)
	}
	fx.c.podUpdated(old, released)
	if got := queued(fx.c); !slices.Equal(got, []string{"ns/web"}) {
		t.Fatalf("queued %v after web released web-0, want ns/web", got)
	}
	relabelled := old.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels["extra"] = "2", "x"
	fx.c.podUpdated(old, relabelled)
	if got := queued(fx.c); !slices.Equal(got, []string{"ns/web"}) {
		t.Fatalf("queued %v for an update keeping the owner, want ns/web once", got)
	}
	fx.c.podUpdated(old, old.DeepCopy())
	if got := queued(fx.c); len(got) != 0 {
		t.Fatalf("queued %v for a resync (same resourceVersion), want nothing", got)
	}
}

// As Kubernetes' CreateStatefulPod, a pod create refused because the name is
// taken (a pod not yet in the cache) records no FailedCreate event; the sync
// still fails, to look again. Other failures are reported, one refused because
// the namespace is being deleted too (v1.33's StatefulSet controller does not
// single that out), and retried.
func TestPodAlreadyExistsIsNotReported(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantEvent bool
	}{
		{"already exists", apierrors.NewAlreadyExists(corev1.Resource("pods"), "web-0"), false},
		{"forbidden", apierrors.NewForbidden(corev1.Resource("pods"), "web-0", errors.New("exceeded quota")), true},
		{"namespace terminating", podsInTerminatingNamespace(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newSet(1))
			fx.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
				t.Fatal("sync succeeded with the create failing")
			}
			var failed []string
			for _, e := range drainEvents(fx.rec) {
				if strings.Contains(e, ReasonFailedCreate) {
					failed = append(failed, e)
				}
			}
			if got := len(failed) > 0; got != tc.wantEvent {
				t.Fatalf("FailedCreate events %q, want some: %v", failed, tc.wantEvent)
			}
		})
	}
}

// As Kubernetes' getOrdinal, web-01 is the set's pod at ordinal 1: it holds
// that place (no web-1 is made beside it), is counted, and goes when the set
// is scaled down below it.
func TestLeadingZeroOrdinal(t *testing.T) {
	set := newSet(2)
	rev := revisionFor(t, set, "web:2", 1)
	zero := member(set, 1, rev.Name)
	zero.Name, zero.UID = "web-01", "uid-web-01"
	zero.Labels[podNameLabel] = zero.Name
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), zero)
	fx.sync(t)
	if got := names(fx.created()); len(got) != 0 {
		t.Fatalf("created %v beside web-01", got)
	}
	if st := fx.status(t); st.Replicas != 2 || st.ReadyReplicas != 2 {
		t.Fatalf("status %+v, want web-01 counted", st)
	}

	set = newSet(1)
	fx = newFixture(t, set, rev, member(set, 0, rev.Name), zero)
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-01"}) {
		t.Fatalf("deleted %v, want web-01 scaled down", got)
	}

	// Beside web-1, web-01 is not the set's pod at 1 (whatever order the
	// cache lists them in): its other revision does not make web-1 roll.
	set = newSet(2)
	stray := zero.DeepCopy()
	stray.Labels[appsv1.ControllerRevisionHashLabelKey] = "web-other"
	for range 8 {
		fx = newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name), stray)
		fx.sync(t)
		if got := fx.deleted(); len(got) != 0 {
			t.Fatalf("deleted %v, want web-1 kept at ordinal 1", got)
		}
	}
}

// As Kubernetes' getPersistentVolumeClaims, a claim keeps the metadata of
// its volumeClaimTemplate: labels (with the selector's added), annotations,
// finalizers and owner references.
func TestClaimKeepsTemplateMetadata(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	yes := true
	cm := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "backup-plan", UID: "uid-cm"}
	op := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Backup", Name: "nightly", UID: "uid-op", Controller: &yes}
	for _, tc := range []struct {
		name       string
		refs       []metav1.OwnerReference
		wantOwners []string
	}{
		{"the set is added to the template's owners", []metav1.OwnerReference{cm}, []string{"ConfigMap/backup-plan", "StatefulSet/web"}},
		{"not as a second controller", []metav1.OwnerReference{op}, []string{"Backup/nightly"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(1, claimTemplates, retention(del, retain))
			meta := &set.Spec.VolumeClaimTemplates[0].ObjectMeta
			meta.Annotations = map[string]string{"example.com/tier": "gold"}
			meta.Finalizers = []string{"example.com/backup"}
			meta.OwnerReferences = tc.refs
			fx := newFixture(t, set)
			fx.sync(t)
			claim, err := fx.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-web-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if claim.Labels["tier"] != "db" || claim.Labels["app"] != "web" || claim.Annotations["example.com/tier"] != "gold" {
				t.Errorf("claim labels %v, annotations %v: want the template's and the selector's", claim.Labels, claim.Annotations)
			}
			if !slices.Equal(claim.Finalizers, []string{"example.com/backup"}) {
				t.Errorf("claim finalizers %v, want the template's", claim.Finalizers)
			}
			var owners []string
			for _, r := range claim.OwnerReferences {
				owners = append(owners, r.Kind+"/"+r.Name)
			}
			if !slices.Equal(owners, tc.wantOwners) {
				t.Errorf("claim owners %v, want %v", owners, tc.wantOwners)
			}
			if set.Spec.VolumeClaimTemplates[0].Labels["app"] != "" {
				t.Errorf("template labels changed: %v", set.Spec.VolumeClaimTemplates[0].Labels)
			}
		})
	}
}

// As Kubernetes' completeRollingUpdate, a rolling update is finished only when spec.replicas
// pods, and no more, are there, updated and ready: a scale-down still under way (three pods
// for two replicas) holds the current revision back until the condemned pod is gone.
func TestRollingUpdateFinishesAfterAScaleDown(t *testing.T) {
	set := newSet(2)
	old := revisionFor(t, set, "web:1", 1)
	update := revisionFor(t, set, "web:2", 2)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, update, member(set, 0, update.Name), member(set, 1, update.Name), member(set, 2, update.Name))
	fx.sync(t)
	if st := fx.status(t); st.CurrentRevision != old.Name {
		t.Fatalf("status: %+v, want the old revision current while web-2 is there", st)
	}
	fx = newFixture(t, set, old, update, member(set, 0, update.Name), member(set, 1, update.Name))
	fx.sync(t)
	if st := fx.status(t); st.CurrentRevision != update.Name || st.CurrentReplicas != 2 {
		t.Fatalf("status: %+v, want the update revision current", st)
	}
}

// A pod below the partition that is gone (deleted, evicted) does not let the update revision
// become current while it is missing, as Kubernetes' completeRollingUpdate judges against
// spec.replicas: the pod comes back at the current revision, keeping the partition.
func TestMissingPodBelowThePartitionKeepsTheCurrentRevision(t *testing.T) {
	set := newSet(3, partition(1))
	old := revisionFor(t, set, "web:1", 1)
	update := revisionFor(t, set, "web:2", 2)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, update, member(set, 1, update.Name), member(set, 2, update.Name))
	fx.sync(t)
	created := fx.created()
	if len(created) != 1 || created[0].Name != "web-0" || revisionOf(created[0]) != old.Name {
		t.Fatalf("created %v, want web-0 at %s", names(created), old.Name)
	}
	if st := fx.status(t); st.CurrentRevision != old.Name {
		t.Fatalf("status: %+v, want %s still current", st, old.Name)
	}
}

// Under OrderedReady the first unhealthy pod, which a scale-down may delete though it is
// not healthy, is judged by readiness alone, as Kubernetes v1.33's isHealthy: a condemned
// pod that is ready but not yet available (minReadySeconds) is not it, so the scale-down
// waits for it to become available, as processCondemned does.
func TestOrderedScaleDownWaitsForAReadyPodToBecomeAvailable(t *testing.T) {
	set := newSet(1, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 60 })
	rev := revisionFor(t, set, "web:2", 1)
	readyNow := func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now) }
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, readyNow))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while web-1 is ready but not yet available", got)
	}
	// Not ready at all, it is the first unhealthy pod and goes.
	fx = newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, notReady))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1"}) {
		t.Fatalf("deleted %v, want web-1", got)
	}
}

// A new pod carries generateName <set>-, as Kubernetes' GetPodFromTemplate sets for every
// controller's pods; its name is still <set>-<ordinal>.
func TestPodCarriesGenerateName(t *testing.T) {
	fx := newFixture(t, newSet(1))
	fx.sync(t)
	pods := fx.created()
	if len(pods) != 1 || pods[0].Name != "web-0" || pods[0].GenerateName != "web-" {
		t.Fatalf("created %+v, want web-0 with generateName web-", pods)
	}
}

// Under Parallel a pod waiting for its stale claim holds up no other pod, as in
// Kubernetes, where processReplica's "no more work this round" stops only the
// OrderedReady walk; the sync still fails, so the set is looked at again.
func TestParallelStaleClaimHoldsUpOnlyItsPod(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	yes := true
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-1", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-1", UID: "uid-old-web-1", Controller: &yes}}}}
	fx := newFixture(t, newSet(3, parallel, claimTemplates, retention(retain, del)), claim)
	err := fx.c.sync(context.Background(), "ns/web")
	if got := names(fx.created()); !slices.Equal(got, []string{"web-0", "web-2"}) {
		t.Fatalf("created %v, want web-0 and web-2 (web-1 waits for its claim)", got)
	}
	if err == nil {
		t.Fatal("sync succeeded while web-1 waits: the set would not be looked at again")
	}
}

// A condemned pod ready but not yet available holds an OrderedReady scale-down back, though
// availableReplicas already equals spec.replicas: the sync looks again when its window ends,
// so the scale-down does not rest on the requeue made when the pod turned ready (lost to a
// restart, or made before minReadySeconds was raised).
func TestScaleDownWaitingForAvailabilityLooksAgain(t *testing.T) {
	set := newSet(1, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 60 })
	rev := revisionFor(t, set, "web:2", 1)
	readySince := func(p *corev1.Pod) {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-20 * time.Second))
	}
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name, readySince))
	q := &afterQueue{Queue: fx.c.queue}
	fx.c.queue = q
	fx.sync(t)
	if len(fx.deleted()) != 0 || !slices.Equal(q.after, []time.Duration{40 * time.Second}) {
		t.Fatalf("deleted %v, requeued after %v: want nothing deleted and a look in 40s", fx.deleted(), q.after)
	}
}

// podsInTerminatingNamespace is the API server's refusal of a pod in a
// namespace being deleted.
func podsInTerminatingNamespace() error {
	err := apierrors.NewForbidden(corev1.Resource("pods"), "web-0", errors.New("namespace ns is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	return err
}

// twoClaimTemplates gives the set the templates data and logs, in that order.
func twoClaimTemplates(s *appsv1.StatefulSet) {
	claimTemplates(s)
	logs := s.Spec.VolumeClaimTemplates[0]
	logs.Name = "logs"
	s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, logs)
}

// As v1.33's createPersistentVolumeClaims, a claim that cannot be made does
// not stop the pod's other claims: each template is tried, each outcome
// recorded (recordClaimEvent), and the pod, held up, is reported with the
// failures joined.
func TestEveryClaimTemplateIsTried(t *testing.T) {
	quota := errors.New("exceeded quota")
	for _, tc := range []struct {
		name    string
		refused []string
		want    []string
	}{
		{"first refused", []string{"data-web-0"}, []string{
			`Warning FailedCreate create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota`,
			`Normal SuccessfulCreate create Claim logs-web-0 Pod web-0 in StatefulSet web success`,
			`Warning FailedCreate create Pod web-0 in StatefulSet web failed error: failed to create PVC data-web-0: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota`,
		}},
		{"both refused", []string{"data-web-0", "logs-web-0"}, []string{
			`Warning FailedCreate create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota`,
			`Warning FailedCreate create Claim logs-web-0 for Pod web-0 in StatefulSet web failed error: persistentvolumeclaims "logs-web-0" is forbidden: exceeded quota`,
			`Warning FailedCreate create Pod web-0 in StatefulSet web failed error: [failed to create PVC data-web-0: persistentvolumeclaims "data-web-0" is forbidden: exceeded quota, ` +
				`failed to create PVC logs-web-0: persistentvolumeclaims "logs-web-0" is forbidden: exceeded quota]`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, newSet(1, twoClaimTemplates))
			fx.client.PrependReactor("create", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
				name := a.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim).Name
				if slices.Contains(tc.refused, name) {
					return true, nil, apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), name, quota)
				}
				return false, nil, nil
			})
			if err := fx.c.sync(context.Background(), "ns/web"); err == nil {
				t.Fatal("sync succeeded with a claim refused")
			}
			if n := len(fx.created()); n != 0 {
				t.Errorf("%d pods created, want the pod held up", n)
			}
			for _, name := range []string{"data-web-0", "logs-web-0"} {
				_, err := fx.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
				if refused := slices.Contains(tc.refused, name); refused != apierrors.IsNotFound(err) {
					t.Errorf("claim %s: get err %v, want it made: %v", name, err, !refused)
				}
			}
			if got := drainEvents(fx.rec); !slices.Equal(got, tc.want) {
				t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Pod events word for word as v1.33's recordPodEvent: "<verb> Pod <pod> in
// StatefulSet <set> successful" or "... failed error: <err>". A pod already
// gone when deleted is no exception there: DeleteStatefulPod tells the
// NotFound (FailedDelete) and returns it.
func TestPodEventWording(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	refuse := func(verb string, err error) func(*fixture) {
		return func(fx *fixture) {
			fx.client.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
		}
	}
	for _, tc := range []struct {
		name    string
		objs    []runtime.Object
		react   func(*fixture)
		wantErr bool
		want    string
	}{
		{"created", []runtime.Object{set, rev}, nil, false,
			"Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful"},
		{"create refused", []runtime.Object{set, rev}, refuse("create", apierrors.NewForbidden(corev1.Resource("pods"), "web-0", errors.New("exceeded quota"))), true,
			`Warning FailedCreate create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: exceeded quota`},
		{"deleted", []runtime.Object{set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name)}, nil, false,
			"Normal SuccessfulDelete delete Pod web-1 in StatefulSet web successful"},
		{"delete refused", []runtime.Object{set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name)}, refuse("delete", errors.New("etcd unavailable")), true,
			"Warning FailedDelete delete Pod web-1 in StatefulSet web failed error: etcd unavailable"},
		{"already gone", []runtime.Object{set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name)}, refuse("delete", apierrors.NewNotFound(corev1.Resource("pods"), "web-1")), true,
			`Warning FailedDelete delete Pod web-1 in StatefulSet web failed error: pods "web-1" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.objs...)
			if tc.react != nil {
				tc.react(fx)
			}
			if err := fx.c.sync(context.Background(), "ns/web"); (err != nil) != tc.wantErr {
				t.Errorf("sync err %v, want one: %v", err, tc.wantErr)
			}
			if got := drainEvents(fx.rec); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}
