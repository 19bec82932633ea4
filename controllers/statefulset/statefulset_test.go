package statefulset

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
	"github.com/skiffkube/skiff/controllers/revision"
	"github.com/skiffkube/skiff/controllers/runner"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	client *fake.Clientset
	c      *Controller
	rec    *record.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(1000)
	c, err := New(client, f.Apps().V1().StatefulSets(), f.Apps().V1().ControllerRevisions(), f.Core().V1().Pods(), f.Core().V1().PersistentVolumeClaims(), rec,
		Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.StatefulSet:
			controllertest.Load(t, f.Apps().V1().StatefulSets().Informer(), o)
		case *appsv1.ControllerRevision:
			controllertest.Load(t, f.Apps().V1().ControllerRevisions().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		case *corev1.PersistentVolumeClaim:
			controllertest.Load(t, f.Core().V1().PersistentVolumeClaims().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, c: c, rec: rec}
}

func (fx *fixture) sync(t *testing.T) {
	t.Helper()
	if err := fx.c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

func (fx *fixture) created() []*corev1.Pod {
	var out []*corev1.Pod
	for _, a := range controllertest.Filter(fx.client.Actions(), "create", "pods") {
		out = append(out, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
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

func (fx *fixture) status(t *testing.T) appsv1.StatefulSetStatus {
	t.Helper()
	s, err := fx.client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Status
}

type setOpt func(*appsv1.StatefulSet)

func tmpl(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func newSet(replicas int32, opts ...setOpt) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: 2, ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, ServiceName: "web-headless",
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:       tmpl("web:2"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func parallel(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
func partition(p int32) setOpt {
	return func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: &p}
	}
}
func currentRevision(name string) setOpt {
	return func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = name }
}

// revisionFor is the ControllerRevision of template t, as the controller names it.
func revisionFor(t *testing.T, set *appsv1.StatefulSet, image string, n int64) *appsv1.ControllerRevision {
	t.Helper()
	tp := tmpl(image)
	data, err := revision.Data(&tp)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	hash := revision.Hash(&tp, nil)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: set.Name + "-" + hash, Namespace: "ns", Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: &yes}}},
		Data: runtime.RawExtension{Raw: data}, Revision: n,
	}
}

type podOpt func(*corev1.Pod)

func member(set *appsv1.StatefulSet, ordinal int, rev string, opts ...podOpt) *corev1.Pod {
	yes := true
	name := set.Name + "-" + string(rune('0'+ordinal))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev,
				podNameLabel: name, podIndexLabel: strconv.Itoa(ordinal)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID, Controller: &yes}},
		},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute)),
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions = nil }
func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(now)
	p.DeletionTimestamp = &ts
}

func TestOrderedReadyStartsOnePodAtATime(t *testing.T) {
	set := newSet(3)
	fx := newFixture(t, set)
	fx.sync(t)
	pods := fx.created()
	if !slices.Equal(names(pods), []string{"web-0"}) {
		t.Fatalf("created %v, want only web-0", names(pods))
	}
	p := pods[0]
	if p.Spec.Hostname != "web-0" || p.Spec.Subdomain != "web-headless" || p.Labels[podNameLabel] != "web-0" ||
		p.Labels[podIndexLabel] != "0" || p.Labels[appsv1.ControllerRevisionHashLabelKey] == "" || metav1.GetControllerOf(p) == nil {
		t.Errorf("pod identity: %+v %s/%s", p.ObjectMeta, p.Spec.Hostname, p.Spec.Subdomain)
	}
	rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]

	// web-0 not ready yet: wait.
	fx = newFixture(t, set, member(set, 0, rev, notReady))
	fx.sync(t)
	if n := len(fx.created()); n != 0 {
		t.Fatalf("created %d pods while web-0 is not ready", n)
	}
	// web-0 ready: web-1 next.
	fx = newFixture(t, set, member(set, 0, rev))
	fx.sync(t)
	if got := names(fx.created()); !slices.Equal(got, []string{"web-1"}) {
		t.Fatalf("created %v, want web-1", got)
	}
}

func TestParallelStartsAllPods(t *testing.T) {
	fx := newFixture(t, newSet(3, parallel))
	fx.sync(t)
	if got := names(fx.created()); !slices.Equal(got, []string{"web-0", "web-1", "web-2"}) {
		t.Fatalf("created %v", got)
	}
}

func TestOrderedScaleDownFromTheHighestOrdinal(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	fx := newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name), member(set, 2, rev.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-2"}) {
		t.Fatalf("deleted %v, want web-2 only", got)
	}
	// web-2 still terminating: web-1 waits.
	fx = newFixture(t, set, rev, member(set, 0, rev.Name), member(set, 1, rev.Name), member(set, 2, rev.Name, terminating))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v while web-2 terminates", got)
	}
	// Parallel: both at once.
	pset := newSet(1, parallel)
	fx = newFixture(t, pset, rev, member(pset, 0, rev.Name), member(pset, 1, rev.Name), member(pset, 2, rev.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Fatalf("parallel deleted %v", got)
	}
}

func TestRollingUpdateFromTheTopDownToThePartition(t *testing.T) {
	set := newSet(3, currentRevision("web-old"))
	old := revisionFor(t, set, "web:1", 1)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, member(set, 0, old.Name), member(set, 1, old.Name), member(set, 2, old.Name))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-2"}) {
		t.Fatalf("deleted %v, want web-2 first", got)
	}
	// As in Kubernetes the status written in that pass no longer counts
	// web-2 as current, though it is still there (terminating).
	update := revisionFor(t, set, "web:2", 2)
	st := fx.status(t)
	if st.UpdateRevision != update.Name || st.CurrentRevision != old.Name || st.Replicas != 3 || st.CurrentReplicas != 2 || st.UpdatedReplicas != 0 {
		t.Errorf("status: %+v", st)
	}

	// Partition 2: web-2 updated, web-0 and web-1 stay; a missing web-1 comes back at the old revision.
	pset := newSet(3, partition(2))
	pset.Status.CurrentRevision = old.Name
	fx = newFixture(t, pset, old, update, member(pset, 0, old.Name), member(pset, 2, update.Name))
	fx.sync(t)
	if got := fx.deleted(); len(got) != 0 {
		t.Fatalf("deleted %v below the partition", got)
	}
	pods := fx.created()
	if len(pods) != 1 || pods[0].Name != "web-1" || pods[0].Spec.Containers[0].Image != "web:1" || pods[0].Labels[appsv1.ControllerRevisionHashLabelKey] != old.Name {
		t.Fatalf("recreated below the partition: %+v", pods)
	}
}

func TestFinishedRollingUpdateBecomesCurrent(t *testing.T) {
	set := newSet(2)
	old := revisionFor(t, set, "web:1", 1)
	update := revisionFor(t, set, "web:2", 2)
	set.Status.CurrentRevision = old.Name
	fx := newFixture(t, set, old, update, member(set, 0, update.Name), member(set, 1, update.Name))
	fx.sync(t)
	st := fx.status(t)
	if st.CurrentRevision != update.Name || st.UpdateRevision != update.Name || st.ReadyReplicas != 2 || st.UpdatedReplicas != 2 || st.ObservedGeneration != 2 {
		t.Fatalf("status: %+v", st)
	}
}

func TestFailedPodIsReplaced(t *testing.T) {
	set := newSet(1)
	rev := revisionFor(t, set, "web:2", 1)
	fx := newFixture(t, set, rev, member(set, 0, rev.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }))
	fx.sync(t)
	if got := fx.deleted(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("deleted %v", got)
	}
}

func claimTemplates(s *appsv1.StatefulSet) {
	s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}},
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}}
	// A template volume of the same name is replaced by the claim.
	s.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

func retention(whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) setOpt {
	return func(s *appsv1.StatefulSet) {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	}
}

func TestVolumeClaimTemplates(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	tests := []struct {
		name      string
		set       *appsv1.StatefulSet
		wantOwner string // "" = no owner
	}{
		{"Retain: claims are created before pods and owned by nobody", newSet(2, parallel, claimTemplates), ""},
		{"whenDeleted Delete: the set owns the claims", newSet(2, parallel, claimTemplates, retention(del, retain)), "StatefulSet/web"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.set)
			fx.sync(t)
			var order []string
			for _, a := range fx.client.Actions() {
				if a.GetVerb() == "create" && (a.GetResource().Resource == "pods" || a.GetResource().Resource == "persistentvolumeclaims") {
					m := a.(k8stesting.CreateAction).GetObject().(metav1.Object)
					order = append(order, a.GetResource().Resource+"/"+m.GetName())
				}
			}
			want := []string{"persistentvolumeclaims/data-web-0", "pods/web-0", "persistentvolumeclaims/data-web-1", "pods/web-1"}
			if !slices.Equal(order, want) {
				t.Fatalf("creates %v, want %v", order, want)
			}
			claim, err := fx.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-web-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if claim.Labels["app"] != "web" || claim.Labels["tier"] != "db" {
				t.Errorf("claim labels %v, want the template's and the selector's", claim.Labels)
			}
			owner := ""
			for _, r := range claim.OwnerReferences {
				owner = r.Kind + "/" + r.Name
			}
			if owner != tc.wantOwner {
				t.Errorf("claim owner %q, want %q", owner, tc.wantOwner)
			}
			pod := fx.created()[1]
			if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
				t.Errorf("pod volumes %+v, want data → claim data-web-1", pod.Spec.Volumes)
			}
		})
	}
}

func TestExistingClaimIsReusedAndATerminatingOneWaits(t *testing.T) {
	set := newSet(1, claimTemplates)
	existing := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-0", Namespace: "ns"}}
	fx := newFixture(t, set, existing)
	fx.sync(t)
	if creates := controllertest.Filter(fx.client.Actions(), "create", "persistentvolumeclaims"); len(creates) != 0 || len(fx.created()) != 1 {
		t.Fatalf("claim creates %d, pod creates %d; want the existing claim reused and the pod created", len(creates), len(fx.created()))
	}

	ts := metav1.NewTime(now)
	terminating := existing.DeepCopy()
	terminating.DeletionTimestamp, terminating.Finalizers = &ts, []string{"kubernetes.io/pvc-protection"}
	fx = newFixture(t, set, terminating)
	if err := fx.c.sync(context.Background(), "ns/web"); err == nil || len(fx.created()) != 0 {
		t.Fatalf("sync err %v, pods %v: want the pod to wait for the old claim to go", err, names(fx.created()))
	}
}

func TestScaleDownWhenScaledDeleteHandsClaimsToThePod(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	for _, tc := range []struct {
		name      string
		policy    setOpt
		wantOwned bool
	}{
		{"whenScaled Delete", retention(retain, del), true},
		{"whenScaled Retain", retention(retain, retain), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(1, parallel, claimTemplates, tc.policy)
			pod := podFor(set, 1, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, &set.Spec.Template)
			pod.UID = "uid-web-1"
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-1", Namespace: "ns"}}
			fx := newFixture(t, set, pod, claim)
			fx.sync(t)
			if !slices.Contains(fx.deleted(), "web-1") {
				t.Fatalf("deleted %v, want web-1", fx.deleted())
			}
			got, _ := fx.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-web-1", metav1.GetOptions{})
			owned := len(got.OwnerReferences) == 1 && got.OwnerReferences[0].UID == "uid-web-1"
			if owned != tc.wantOwned {
				t.Fatalf("claim owners %+v, want owned by the pod: %v", got.OwnerReferences, tc.wantOwned)
			}
		})
	}
}

// As Kubernetes' StatefulSet controller (processNextWorkItem requeues a failed
// sync with backoff, never dropping it): a set whose pod create is refused for
// a while (a quota exceeded, a webhook down) gets its pod once the create is
// allowed again, with no event about the set or its pods in between.
func TestRefusedCreateIsRetriedUntilItIsAllowed(t *testing.T) {
	const refused = runner.MaxRetries + 5
	client := controllertest.NewClient(newSet(1))
	creates := controllertest.RefuseFirst(client, "create", "pods", refused, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("exceeded quota")))
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Apps().V1().StatefulSets(), f.Apps().V1().ControllerRevisions(), f.Core().V1().Pods(), f.Core().V1().PersistentVolumeClaims(),
		record.NewFakeRecorder(1000), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.queue = runner.NewQueueWithRateLimiter(Name, controllertest.FastBackoff())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done; f.Shutdown() }()
	f.Start(ctx.Done())
	go func() { defer close(done); c.Run(ctx, 1) }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("ns").Get(ctx, "web-0", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no pod web-0 after %d creates, the first %d refused", creates.Load(), refused)
	}
}
