package persistentvolume

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func claim(name, class, size string, modify ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			StorageClassName: &class,
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range modify {
		m(c)
	}
	return c
}

func volume(name, class, size string, modify ...func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
	for _, m := range modify {
		m(v)
	}
	return v
}

func claimRef(c *corev1.PersistentVolumeClaim) func(*corev1.PersistentVolume) {
	return func(v *corev1.PersistentVolume) {
		v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	}
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

type fixture struct {
	c      *Controller
	client *fake.Clientset
	events chan string
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClient(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := record.NewFakeRecorder(20)
	c, err := New(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(),
		f.Storage().V1().StorageClasses(), f.Core().V1().Nodes(), rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.PersistentVolumeClaim:
			controllertest.Load(t, f.Core().V1().PersistentVolumeClaims().Informer(), o)
		case *corev1.PersistentVolume:
			controllertest.Load(t, f.Core().V1().PersistentVolumes().Informer(), o)
		case *storagev1.StorageClass:
			controllertest.Load(t, f.Storage().V1().StorageClasses().Informer(), o)
		case *corev1.Node:
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), o)
		}
	}
	client.ClearActions()
	return &fixture{c: c, client: client, events: rec.Events}
}

func (f *fixture) claim(t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c, err := f.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	v, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return v
}

func TestClaimBinding(t *testing.T) {
	wffc := class("local", "skiff.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := class("fast", "example.com/fast", storagev1.VolumeBindingImmediate)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1"}}}
	onNode := func(n string) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}}}}
		}
	}
	selected := func(n string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{"volume.kubernetes.io/selected-node": n}
		}
	}
	data := claim("data", "", "1Gi")
	labeled := func(l map[string]string) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) { v.Labels = l }
	}
	selecting := func(sel *metav1.LabelSelector) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = sel }
	}
	tests := []struct {
		name       string
		claim      *corev1.PersistentVolumeClaim
		objs       []runtime.Object
		wantVolume string // "" = stays unbound
		wantEvent  string
		wantAnn    string // provisioner annotation expected on the claim
	}{
		{name: "the smallest volume that fits is bound", claim: data,
			objs:       []runtime.Object{volume("small", "", "500Mi"), volume("big", "", "10Gi"), volume("right", "", "2Gi")},
			wantVolume: "right"},
		{name: "a volume of another class does not fit", claim: data,
			objs: []runtime.Object{volume("other", "fast", "2Gi")}, wantEvent: "FailedBinding"},
		{name: "a volume without every access mode does not fit", claim: claim("data", "", "1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), objs: []runtime.Object{volume("rwo", "", "2Gi")}},
		{name: "a volume bound to another claim does not fit", claim: data,
			objs: []runtime.Object{volume("taken", "", "2Gi", claimRef(claim("other", "", "1Gi")))}},
		{name: "a volume pre-bound to the claim wins over a smaller free one", claim: data,
			objs:       []runtime.Object{volume("free", "", "1Gi"), volume("mine", "", "5Gi", claimRef(data))},
			wantVolume: "mine"},
		{name: "WaitForFirstConsumer waits for the scheduler", claim: claim("data", "local", "1Gi"),
			objs: []runtime.Object{wffc, volume("local-1", "local", "2Gi")}, wantEvent: "WaitForFirstConsumer"},
		{name: "WaitForFirstConsumer binds a volume on the selected node", claim: claim("data", "local", "1Gi", selected("n1")),
			objs:       []runtime.Object{wffc, node, volume("elsewhere", "local", "1Gi", onNode("n2")), volume("here", "local", "2Gi", onNode("n1"))},
			wantVolume: "here"},
		{name: "a claim nothing fits is left to its class's provisioner", claim: claim("data", "fast", "1Gi"),
			objs: []runtime.Object{immediate}, wantEvent: "ExternalProvisioning", wantAnn: "example.com/fast"},
		{name: "a claim's matchLabels selector binds only a volume with those labels", claim: claim("data", "", "1Gi",
			selecting(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})),
			objs: []runtime.Object{volume("plain", "", "1Gi"), volume("silver", "", "1Gi", labeled(map[string]string{"tier": "silver"})),
				volume("gold", "", "5Gi", labeled(map[string]string{"tier": "gold", "zone": "a"}))},
			wantVolume: "gold"},
		{name: "a claim's matchExpressions selector binds only a matching volume", claim: claim("data", "", "1Gi",
			selecting(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "silver"}},
				{Key: "retired", Operator: metav1.LabelSelectorOpDoesNotExist},
			}})),
			objs: []runtime.Object{volume("plain", "", "1Gi"), volume("old", "", "1Gi", labeled(map[string]string{"tier": "gold", "retired": "yes"})),
				volume("silver", "", "2Gi", labeled(map[string]string{"tier": "silver"}))},
			wantVolume: "silver"},
		{name: "a claim whose selector matches no volume stays unbound", claim: claim("data", "", "1Gi",
			selecting(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})),
			objs:      []runtime.Object{volume("plain", "", "1Gi"), volume("silver", "", "1Gi", labeled(map[string]string{"tier": "silver"}))},
			wantEvent: "FailedBinding"},
		{name: "a claim with a selector is still handed to its provisioner, which decides", claim: claim("data", "fast", "1Gi",
			selecting(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}})),
			objs: []runtime.Object{immediate, volume("plain", "fast", "1Gi")}, wantEvent: "ExternalProvisioning", wantAnn: "example.com/fast"},
		{name: "a volume provisioned for the claim is bound", claim: claim("data", "local", "1Gi", selected("n1")),
			objs:       []runtime.Object{wffc, node, volume("pvc-uid-data", "local", "1Gi", onNode("n1"), claimRef(data))},
			wantVolume: "pvc-uid-data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{tc.claim}, tc.objs...)...)
			if err := f.c.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
				t.Fatal(err)
			}
			got := f.claim(t, "data")
			if got.Spec.VolumeName != tc.wantVolume {
				t.Fatalf("claim bound to %q, want %q", got.Spec.VolumeName, tc.wantVolume)
			}
			if tc.wantVolume != "" {
				pv := f.volume(t, tc.wantVolume)
				if got.Status.Phase != corev1.ClaimBound || pv.Status.Phase != corev1.VolumeBound {
					t.Errorf("phases: claim %s, volume %s; want Bound, Bound", got.Status.Phase, pv.Status.Phase)
				}
				if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" || pv.Spec.ClaimRef.UID != got.UID {
					t.Errorf("volume claimRef %+v", pv.Spec.ClaimRef)
				}
				if got.Status.Capacity.Storage().Cmp(*pv.Spec.Capacity.Storage()) != 0 || len(got.Status.AccessModes) == 0 {
					t.Errorf("bound claim status %+v does not report the volume's capacity and modes", got.Status)
				}
				if got.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
					t.Errorf("claim annotations %v", got.Annotations)
				}
			} else if got.Status.Phase != corev1.ClaimPending {
				t.Errorf("unbound claim phase %s, want Pending", got.Status.Phase)
			}
			if tc.wantAnn != "" && got.Annotations["volume.kubernetes.io/storage-provisioner"] != tc.wantAnn {
				t.Errorf("claim annotations %v, want storage-provisioner %s", got.Annotations, tc.wantAnn)
			}
			events := strings.Join(controllertest.Events(f.events), "\n")
			if tc.wantEvent != "" && !strings.Contains(events, tc.wantEvent) {
				t.Errorf("events %q, want %s", events, tc.wantEvent)
			}
		})
	}
}

func TestVolumeReclaim(t *testing.T) {
	gone := claim("gone", "", "1Gi")
	data := claim("data", "", "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv"; c.Status.Phase = corev1.ClaimBound })
	deletePolicy := func(v *corev1.PersistentVolume) {
		v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	}
	bound := func(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumeBound }
	tests := []struct {
		name        string
		objs        []runtime.Object
		wantPhase   corev1.PersistentVolumePhase
		wantDeleted bool
	}{
		{"a volume without a claim is Available", []runtime.Object{volume("pv", "", "1Gi", func(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumePending })},
			corev1.VolumeAvailable, false},
		{"a volume whose claim uses it is Bound", []runtime.Object{data, volume("pv", "", "1Gi", claimRef(data))}, corev1.VolumeBound, false},
		{"Retain: a volume whose claim is gone is Released and kept", []runtime.Object{volume("pv", "", "1Gi", claimRef(gone), bound)},
			corev1.VolumeReleased, false},
		{"Delete: a volume whose claim is gone is deleted", []runtime.Object{volume("pv", "", "1Gi", claimRef(gone), bound, deletePolicy)},
			"", true},
		{"a claim recreated with the same name is another claim", []runtime.Object{
			claim("gone", "", "1Gi", func(c *corev1.PersistentVolumeClaim) { c.UID = "new" }), volume("pv", "", "1Gi", claimRef(gone), bound, deletePolicy)},
			"", true},
		{"Delete: a volume provisioned for a claim that went to another volume is deleted", []runtime.Object{
			claim("data", "", "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other"; c.Status.Phase = corev1.ClaimBound }),
			volume("pv", "", "1Gi", claimRef(data), deletePolicy, func(v *corev1.PersistentVolume) {
				v.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "skiff.io/local-path"}
			})}, "", true},
		{"a volume pre-bound to a claim not made yet stays Available", []runtime.Object{volume("pv", "", "1Gi", func(v *corev1.PersistentVolume) {
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "later"}
			v.Status.Phase = corev1.VolumePending
		})}, corev1.VolumeAvailable, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.objs...)
			if err := f.c.sync(context.Background(), volumeKeyPrefix+"pv"); err != nil {
				t.Fatal(err)
			}
			pv := f.volume(t, "pv")
			if tc.wantDeleted {
				if pv != nil {
					t.Fatalf("volume kept (phase %s), want deleted", pv.Status.Phase)
				}
				return
			}
			if pv == nil || pv.Status.Phase != tc.wantPhase {
				t.Fatalf("volume %+v, want phase %s", pv, tc.wantPhase)
			}
		})
	}
}

func TestBoundClaimLosesItsVolume(t *testing.T) {
	data := claim("data", "", "1Gi", func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = "pv"
		c.Status.Phase = corev1.ClaimBound
		c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	})
	f := newFixture(t, data)
	if err := f.c.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(t, "data"); got.Status.Phase != corev1.ClaimLost {
		t.Fatalf("claim phase %s, want Lost", got.Status.Phase)
	}
	if ev := strings.Join(controllertest.Events(f.events), "\n"); !strings.Contains(ev, "ClaimLost") {
		t.Errorf("events %q, want ClaimLost", ev)
	}
}

func TestVolumeTheBinderGaveToAClaimBoundElsewhereIsFreed(t *testing.T) {
	data := claim("data", "", "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other"; c.Status.Phase = corev1.ClaimBound })
	pv := volume("pv", "", "1Gi", claimRef(data), func(v *corev1.PersistentVolume) {
		v.Annotations = map[string]string{"pv.kubernetes.io/bound-by-controller": "yes"}
		v.Status.Phase = corev1.VolumeBound
	})
	f := newFixture(t, data, pv)
	if err := f.c.sync(context.Background(), volumeKeyPrefix+"pv"); err != nil {
		t.Fatal(err)
	}
	got := f.volume(t, "pv")
	if got == nil || got.Spec.ClaimRef != nil || got.Annotations["pv.kubernetes.io/bound-by-controller"] != "" {
		t.Fatalf("volume %+v, want its claimRef and bound-by-controller removed", got)
	}
}

// TestClaimMadeBeforeItsVolume: a claim nothing fits stays Pending; a free
// volume appearing later queues the waiting claims of its class (and the
// periodic resync all of them), and the claim is bound.
func TestClaimMadeBeforeItsVolume(t *testing.T) {
	data := claim("data", "", "1Gi")
	other := claim("other", "gold", "1Gi")
	f := newFixture(t, data, other)
	if err := f.c.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(t, "data"); got.Status.Phase != corev1.ClaimPending || got.Spec.VolumeName != "" {
		t.Fatalf("claim %s %q before any volume exists, want Pending and unbound", got.Status.Phase, got.Spec.VolumeName)
	}
	for f.c.queue.Len() > 0 { // what the fixture's loading queued
		k, _ := f.c.queue.Get()
		f.c.queue.Done(k)
	}
	pv := volume("late", "", "1Gi")
	if _, err := f.client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.volumeIndex.Add(pv); err != nil {
		t.Fatal(err)
	}
	f.c.enqueueUnbound(&pv.Spec.StorageClassName)
	if n := f.c.queue.Len(); n != 1 {
		t.Fatalf("%d claims queued for a free volume of class \"\", want 1 (data)", n)
	}
	key, _ := f.c.queue.Get()
	f.c.queue.Done(key)
	if err := f.c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := f.claim(t, "data"); got.Spec.VolumeName != "late" {
		t.Fatalf("claim bound to %q once a volume appeared, want late", got.Spec.VolumeName)
	}
	// The resync queues every claim the cache shows unbound (here both:
	// the fixture's cache does not see the binding just written).
	f.c.enqueueUnbound(nil)
	if n := f.c.queue.Len(); n != 2 {
		t.Fatalf("the resync queued %d claims, want 2", n)
	}
}
