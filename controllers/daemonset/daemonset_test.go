package daemonset

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/deployment"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
	pods   cache.Store
	revs   cache.Store
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Apps().V1().DaemonSets(), f.Apps().V1().ControllerRevisions(), f.Core().V1().Pods(), f.Core().V1().Nodes(),
		rec, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.DaemonSet:
			controllertest.Load(t, f.Apps().V1().DaemonSets().Informer(), o)
		case *appsv1.ControllerRevision:
			controllertest.Load(t, f.Apps().V1().ControllerRevisions().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.Node:
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec, pods: f.Core().V1().Pods().Informer().GetStore(),
		revs: f.Apps().V1().ControllerRevisions().Informer().GetStore()}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/agent"); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// createdOn lists the nodes pods were created for, sorted.
func (fx *fixture) createdOn() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "create", "pods") {
		out = append(out, targetNode(a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)))
	}
	sort.Strings(out)
	return out
}

func (fx *fixture) deleted() []string {
	var out []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "pods") {
		out = append(out, a.(k8stesting.DeleteAction).GetName())
	}
	sort.Strings(out)
	return out
}

func (fx *fixture) status(t *testing.T) appsv1.DaemonSetStatus {
	t.Helper()
	ds, err := fx.client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds.Status
}

type dsOpt func(*appsv1.DaemonSet)

func newDS(opts ...dsOpt) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "uid-agent", Generation: 3, ResourceVersion: "1"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func selecting(k, v string) dsOpt {
	return func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{k: v} }
}
func tolerating(key string) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = append(ds.Spec.Template.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}
func maxUnavail(v intstr.IntOrString) dsOpt {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &v}
	}
}

type nodeOpt func(*corev1.Node)

func newNode(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func label(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }
func taint(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

type podOpt func(*corev1.Pod)

// daemonPod is a pod of ds on node, of the template's current revision unless changed by opts.
func daemonPod(ds *appsv1.DaemonSet, name, node string, opts ...podOpt) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels:            map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: deployment.ComputeHash(&ds.Spec.Template, nil)},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour)),
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func oldRevision(p *corev1.Pod) { p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = "old" }
func notReady(p *corev1.Pod)    { p.Status.Conditions = nil }
func newer(p *corev1.Pod)       { p.CreationTimestamp = metav1.NewTime(now) }
func failed(p *corev1.Pod)      { p.Status.Phase = corev1.PodFailed }

func TestOnePodPerMatchingNode(t *testing.T) {
	ds := newDS(selecting("role", "edge"))
	fx := newFixture(t, ds,
		newNode("n1", label("role", "edge")),
		newNode("n2", label("role", "edge"), taint("dedicated", corev1.TaintEffectNoSchedule)),
		newNode("n3"),
		newNode("n4", label("role", "edge"), taint("node.kubernetes.io/unschedulable", corev1.TaintEffectNoSchedule)),
		newNode("n5", label("role", "edge"), taint("node.kubernetes.io/not-ready", corev1.TaintEffectNoExecute)))
	fx.sync(t)
	// n2's taint is not tolerated, n3 does not match; the default daemon tolerations admit n4 and n5.
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1", "n4", "n5"}) {
		t.Fatalf("created on %v", got)
	}
	pod := controllertest.Filter(fx.client.Actions(), "create", "pods")[0].(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == "" || metav1.GetControllerOf(pod) == nil || pod.Spec.NodeName != "" {
		t.Errorf("pod: %+v", pod.ObjectMeta)
	}
	var keys []string
	for _, tol := range pod.Spec.Tolerations {
		keys = append(keys, tol.Key)
	}
	for _, want := range []string{taintNotReady, taintUnreachable, taintUnschedulable, taintDiskPressure} {
		if !slices.Contains(keys, want) {
			t.Errorf("pod lacks toleration %s: %v", want, keys)
		}
	}
	if n := len(controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions")); n != 1 {
		t.Errorf("controller revisions created: %d", n)
	}
	if st := fx.status(t); st.DesiredNumberScheduled != 3 || st.ObservedGeneration != 3 || st.NumberUnavailable != 3 {
		t.Errorf("status: %+v", st)
	}
}

func TestTolerationAdmitsTaintedNode(t *testing.T) {
	fx := newFixture(t, newDS(tolerating("dedicated")), newNode("n1", taint("dedicated", corev1.TaintEffectNoSchedule)))
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("created on %v", got)
	}
}

func TestPodsLeaveNodesTheyNoLongerFit(t *testing.T) {
	ds := newDS(selecting("role", "edge"))
	fx := newFixture(t, ds,
		newNode("unlabelled"),
		newNode("noexec", label("role", "edge"), taint("evict", corev1.TaintEffectNoExecute)),
		newNode("nosched", label("role", "edge"), taint("later", corev1.TaintEffectNoSchedule)),
		daemonPod(ds, "p-unlabelled", "unlabelled"), daemonPod(ds, "p-noexec", "noexec"), daemonPod(ds, "p-nosched", "nosched"),
		daemonPod(ds, "p-gone", "deleted-node"))
	fx.sync(t)
	// A NoSchedule taint added after the pod started does not evict it. The pod of a
	// node that no longer exists is left to PodGC, as in Kubernetes.
	if got := fx.deleted(); !slices.Equal(got, []string{"p-noexec", "p-unlabelled"}) {
		t.Fatalf("deleted %v", got)
	}
	// As in Kubernetes, a pod kept on a node it would no longer be placed on counts as
	// misscheduled; p-gone's node is unknown and not counted.
	if st := fx.status(t); st.NumberMisscheduled != 3 || st.DesiredNumberScheduled != 0 {
		t.Errorf("status: %+v", st)
	}
}

func TestDuplicateAndFailedPodsAreDeleted(t *testing.T) {
	ds := newDS()
	fx := newFixture(t, ds, newNode("n1"), newNode("n2"),
		daemonPod(ds, "first", "n1"), daemonPod(ds, "second", "n1", newer),
		daemonPod(ds, "broken", "n2", failed))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"broken", "second"}) {
		t.Fatalf("deleted %v", got)
	}
	// As in Kubernetes, the replacement waits for the failed pod to be gone.
	if got := fx.createdOn(); len(got) != 0 {
		t.Fatalf("created on %v while the failed pod is still there", got)
	}
}

// A node that fails every daemon pod gets replacements ever more slowly
// (1 s, 2 s, … up to 15 min), as in Kubernetes, instead of a hot loop.
func TestFailedPodReplacementBacksOff(t *testing.T) {
	ds := newDS()
	broken := daemonPod(ds, "broken-0", "n1", failed)
	fx := newFixture(t, ds, newNode("n1"), broken)
	clock := now
	fx.c.now = func() time.Time { return clock }
	fx.sync(t) // writes the ControllerRevision; the informer would bring it back
	revs, err := fx.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 {
		t.Fatalf("revisions %v, %v", revs, err)
	}
	if err := fx.revs.Add(&revs.Items[0]); err != nil {
		t.Fatal(err)
	}
	fx.c.failedBackoff.Reset(failedBackoffKey(ds, "n1")) // that sync's deletion is replayed by step
	fx.c.exp.Forget("ns/agent")
	controllertest.Events(fx.rec.Events)
	// step: the failed pod goes, its replacement is created and fails at once.
	step := func(name string) {
		t.Helper()
		fx.client.ClearActions()
		fx.sync(t)
		if got := fx.deleted(); !slices.Equal(got, []string{broken.Name}) {
			t.Fatalf("at +%v deleted %v, want %s", clock.Sub(now), got, broken.Name)
		}
		if err := fx.pods.Delete(broken); err != nil {
			t.Fatal(err)
		}
		fx.c.podChanged(broken, false, true)
		fx.client.ClearActions()
		fx.sync(t)
		if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) {
			t.Fatalf("at +%v created on %v after the failed pod went, want n1", clock.Sub(now), got)
		}
		broken = daemonPod(ds, name, "n1", failed)
		if err := fx.pods.Add(broken); err != nil {
			t.Fatal(err)
		}
		fx.c.podChanged(broken, true, false)
	}
	waits := func() {
		t.Helper()
		fx.client.ClearActions()
		fx.sync(t)
		if got, created := fx.deleted(), fx.createdOn(); len(got) != 0 || len(created) != 0 {
			t.Fatalf("at +%v deleted %v and created on %v during the back-off", clock.Sub(now), got, created)
		}
	}
	step("broken-1")
	waits()
	clock = clock.Add(1100 * time.Millisecond)
	step("broken-2")
	clock = clock.Add(1100 * time.Millisecond)
	waits() // the back-off is 2 s now
	clock = clock.Add(time.Second)
	step("broken-3")
	if got := len(slices.DeleteFunc(controllertest.Events(fx.rec.Events), func(e string) bool { return !strings.Contains(e, ReasonFailedDaemonPod) })); got != 3 {
		t.Errorf("%d FailedDaemonPod events, want one per deleted pod (3)", got)
	}
}

func TestRollingUpdateHonoursMaxUnavailable(t *testing.T) {
	ds := newDS()
	nodes := []runtime.Object{ds, newNode("n1"), newNode("n2"), newNode("n3"), newNode("n4")}
	all := append(nodes, daemonPod(ds, "a", "n1", oldRevision), daemonPod(ds, "b", "n2", oldRevision),
		daemonPod(ds, "c", "n3", oldRevision), daemonPod(ds, "d", "n4"))
	fx := newFixture(t, all...)
	fx.sync(t)
	if got := fx.deleted(); len(got) != 1 {
		t.Fatalf("maxUnavailable 1: deleted %v", got)
	}
	st := fx.status(t)
	if st.UpdatedNumberScheduled != 1 || st.NumberAvailable != 4 || st.DesiredNumberScheduled != 4 {
		t.Errorf("status: %+v", st)
	}

	// An old pod that is not available goes at once and uses up the budget.
	all = append(nodes, daemonPod(ds, "a", "n1", oldRevision, notReady), daemonPod(ds, "b", "n2", oldRevision),
		daemonPod(ds, "c", "n3", oldRevision), daemonPod(ds, "d", "n4"))
	fx = newFixture(t, all...)
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("deleted %v, want only the unavailable old pod", got)
	}

	// 50% of 4 nodes: two at a time.
	ds50 := newDS(maxUnavail(intstr.FromString("50%")))
	all = []runtime.Object{ds50, newNode("n1"), newNode("n2"), newNode("n3"), newNode("n4"),
		daemonPod(ds50, "a", "n1", oldRevision), daemonPod(ds50, "b", "n2", oldRevision),
		daemonPod(ds50, "c", "n3", oldRevision), daemonPod(ds50, "d", "n4", oldRevision)}
	fx = newFixture(t, all...)
	fx.sync(t)
	if got := fx.deleted(); len(got) != 2 {
		t.Fatalf("maxUnavailable 50%%: deleted %v", got)
	}
}

func TestOnDeleteKeepsOldPods(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	})
	fx := newFixture(t, ds, newNode("n1"), daemonPod(ds, "a", "n1", oldRevision))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v", got)
	}
}

func TestRevisionsNumberedAndPruned(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr(int32(1)) })
	fx := newFixture(t, ds, ownedRevision("r1", 1), ownedRevision("r2", 2), ownedRevision("r3", 3))
	fx.sync(t)
	creates := controllertest.Filter(fx.client.Actions(), "create", "controllerrevisions")
	if len(creates) != 1 || creates[0].(k8stesting.CreateAction).GetObject().(*appsv1.ControllerRevision).Revision != 4 {
		t.Fatalf("want revision 4 created: %v", creates)
	}
	var deleted []string
	for _, a := range controllertest.Filter(fx.client.Actions(), "delete", "controllerrevisions") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	if !slices.Equal(deleted, []string{"agent-r1", "agent-r2"}) {
		t.Fatalf("pruned %v, want the two oldest beyond the limit of 1", deleted)
	}
}

func ptr[T any](v T) *T { return &v }

// ownedRevision is a ControllerRevision of newDS's DaemonSet, named after its hash label.
func ownedRevision(hash string, n int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + hash, Namespace: "ns", Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "uid-agent", Controller: ptr(true)}}},
		Revision: n,
	}
}

func TestRollingUpdateWithSurge(t *testing.T) {
	surge := func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	}
	ds := newDS(surge)
	nodes := []runtime.Object{ds, newNode("n1"), newNode("n2"), newNode("n3")}
	with := func(pods ...runtime.Object) []runtime.Object {
		return append(append([]runtime.Object{}, nodes...), pods...)
	}

	// All old and available: one surge pod, nothing deleted.
	fx := newFixture(t, with(daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "o2", "n2", oldRevision), daemonPod(ds, "o3", "n3", oldRevision))...)
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n1"}) || len(fx.deleted()) != 0 {
		t.Fatalf("first step: created on %v, deleted %v", got, fx.deleted())
	}
	// The surge pod on n1 is not available yet: wait, keep the old one.
	fx = newFixture(t, with(daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "new1", "n1", notReady, newer),
		daemonPod(ds, "o2", "n2", oldRevision), daemonPod(ds, "o3", "n3", oldRevision))...)
	fx.sync(t)
	if len(fx.createdOn()) != 0 || len(fx.deleted()) != 0 {
		t.Fatalf("surge in flight: created on %v, deleted %v", fx.createdOn(), fx.deleted())
	}
	st := fx.status(t)
	if st.NumberAvailable != 3 || st.UpdatedNumberScheduled != 0 {
		t.Errorf("status during the surge: %+v", st)
	}
	// Available: the old pod on n1 goes; once that is seen, n2 surges and the unavailable old
	// pod on n3 is replaced at once.
	o1 := daemonPod(ds, "o1", "n1", oldRevision)
	fx = newFixture(t, with(o1, daemonPod(ds, "new1", "n1", newer),
		daemonPod(ds, "o2", "n2", oldRevision), daemonPod(ds, "o3", "n3", oldRevision, notReady))...)
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"o1"}) {
		t.Fatalf("deleted %v, want the replaced old pod", got)
	}
	if got := fx.createdOn(); len(got) != 0 {
		t.Fatalf("created on %v while the deletion is outstanding", got)
	}
	fx.observeDeleted(t, o1)
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("created on %v", got)
	}
}

// observeDeleted removes pod from the informer cache and reports its deletion, as the watch
// would, brings the revisions the controller wrote into the cache, and clears the actions.
func (fx *fixture) observeDeleted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := fx.pods.Delete(pod); err != nil {
		t.Fatal(err)
	}
	fx.c.podChanged(pod, false, true)
	fx.cacheRevisions(t)
	fx.client.ClearActions()
}

// The pressure taints the node lifecycle controller sets by condition keep
// ordinary pods off but not daemon pods, as in Kubernetes;
// network-unavailable admits only host-network daemons.
func TestDaemonPodsTolerateNodeConditionTaints(t *testing.T) {
	nodes := func() []runtime.Object {
		return []runtime.Object{
			newNode("mem", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)),
			newNode("disk", taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)),
			newNode("pid", taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)),
			newNode("net", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)),
		}
	}
	fx := newFixture(t, append([]runtime.Object{newDS()}, nodes()...)...)
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"disk", "mem", "pid"}) {
		t.Errorf("created on %v, want disk, mem, pid", got)
	}
	hostNet := newDS()
	hostNet.Spec.Template.Spec.HostNetwork = true
	fx = newFixture(t, append([]runtime.Object{hostNet}, nodes()...)...)
	fx.sync(t)
	if got := fx.createdOn(); !slices.Equal(got, []string{"disk", "mem", "net", "pid"}) {
		t.Errorf("host-network daemon created on %v, want all four", got)
	}
}

// A deleted node wakes only the DaemonSets it concerns: one whose pod belongs there, and one
// with a pod bound to or meant for it though its placement no longer says so. One that
// selects other nodes is left alone.
func TestNodeDeletionWakesOnlyTheDaemonSetsConcerned(t *testing.T) {
	gone := newNode("n1", label("role", "edge"))
	named := func(name string) dsOpt {
		return func(ds *appsv1.DaemonSet) { ds.Name, ds.UID = name, types.UID("uid-"+name) }
	}
	placed := newDS(named("placed"), selecting("role", "edge"))
	elsewhere := newDS(named("elsewhere"), selecting("role", "core"))
	stray := newDS(named("stray"), selecting("role", "core")) // still has a pod on n1
	pending := newDS(named("pending"), selecting("role", "core"))
	unbound := daemonPod(pending, "p-unbound", "")
	unbound.Spec.Affinity = podFor(pending, "n1", "h").Spec.Affinity
	fx := newFixture(t, placed, elsewhere, stray, pending, daemonPod(stray, "s-n1", "n1"), unbound)
	fx.c.nodeDeleted(cache.DeletedFinalStateUnknown{Key: "n1", Obj: gone})
	var queued []string
	for fx.c.queue.Len() > 0 {
		k, _ := fx.c.queue.Get()
		fx.c.queue.Done(k)
		queued = append(queued, k)
	}
	sort.Strings(queued)
	if want := []string{"ns/pending", "ns/placed", "ns/stray"}; !slices.Equal(queued, want) {
		t.Fatalf("queued %v, want %v", queued, want)
	}
}

// A deletion the informer reports before the sync is over (a fast watch)
// satisfies the expectations at once, and the rolling update runs in the same
// sync: as in Kubernetes, which reads the node's pods again for it, it must
// see the pod being deleted rather than the sync's earlier copy, and not
// delete it a second time (seen end to end: "Deleted pod: agent-x" x2 on most
// surge updates, the second deletion also holding the next sync until the
// pod was gone).
func TestAPodDeletedBySyncIsNotDeletedAgainByTheRollingUpdate(t *testing.T) {
	surge := func(ds *appsv1.DaemonSet) {
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: &one, MaxUnavailable: &zero}
	}
	for _, tc := range []struct {
		name string
		ds   *appsv1.DaemonSet
		pods func(*appsv1.DaemonSet) []runtime.Object
		gone string
	}{
		{"surge: the old pod beside an available current one", newDS(surge), func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, "o1", "n1", oldRevision), daemonPod(ds, "new1", "n1", newer)}
		}, "o1"},
		{"maxUnavailable: a failed old pod", newDS(), func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, "o1", "n1", oldRevision, failed)}
		}, "o1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, append([]runtime.Object{tc.ds, newNode("n1")}, tc.pods(tc.ds)...)...)
			fx.client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				name := a.(k8stesting.DeleteAction).GetName()
				obj, ok, _ := fx.pods.GetByKey("ns/" + name)
				if !ok {
					return false, nil, nil
				}
				old := obj.(*corev1.Pod)
				cur := old.DeepCopy()
				ts := metav1.NewTime(now)
				cur.DeletionTimestamp, cur.ResourceVersion = &ts, "2"
				if err := fx.pods.Update(cur); err != nil {
					t.Fatal(err)
				}
				fx.c.podUpdated(old, cur) // the watch is quick
				return false, nil, nil
			})
			fx.sync(t)
			if got := fx.deleted(); !slices.Equal(got, []string{tc.gone}) {
				t.Fatalf("deleted %v, want %s once", got, tc.gone)
			}
		})
	}
}
