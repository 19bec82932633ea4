package volumebinding

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	fwruntime "github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func podWithClaims(claims ...string) *v1.Pod {
	p := schedtest.MakePod().Name("p").Namespace("ns").Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func claim(name, class, volume string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			StorageClassName: &class, VolumeName: volume,
		}}
	if volume != "" {
		c.Status.Phase = v1.ClaimBound
	}
	return c
}

func volumeOn(name, class, node string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		StorageClassName:       class,
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/data/" + name}},
	}, Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
	if node != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	return pv
}

func class(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

// newPlugin builds the plugin over a fake clientset holding objs, with the
// objects loaded into the informer caches it reads.
func newPlugin(t *testing.T, args Args, objs ...runtime.Object) (*VolumeBinding, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	h := schedtest.Framework(t, cs, fwruntime.Registry{}, nil)
	p, err := New(args, h)
	if err != nil {
		t.Fatal(err)
	}
	f := h.SharedInformerFactory()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *v1.PersistentVolumeClaim:
			err = f.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
		case *v1.PersistentVolume:
			err = f.Core().V1().PersistentVolumes().Informer().GetIndexer().Add(o)
		case *storagev1.StorageClass:
			err = f.Storage().V1().StorageClasses().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return p.(*VolumeBinding), cs
}

func TestVolumeBindingFilter(t *testing.T) {
	n1 := schedtest.MakeNode().Name("n1").Label(v1.LabelHostname, "n1").Obj()
	local := class("local-path", "skiff.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)
	static := class("static", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := class("fast", "example.com/fast", storagev1.VolumeBindingImmediate)
	tests := []struct {
		name string
		pod  *v1.Pod
		objs []runtime.Object
		want string
	}{
		{name: "a pod without claims fits", pod: podWithClaims()},
		{name: "a missing claim makes the pod unschedulable", pod: podWithClaims("data"),
			want: `UnschedulableAndUnresolvable: persistentvolumeclaim "data" not found`},
		{name: "a claim bound to a volume on this node fits", pod: podWithClaims("data"),
			objs: []runtime.Object{claim("data", "local-path", "pv1"), volumeOn("pv1", "local-path", "n1")}},
		{name: "a claim bound to a volume on another node does not fit", pod: podWithClaims("data"),
			objs: []runtime.Object{claim("data", "local-path", "pv1"), volumeOn("pv1", "local-path", "n2")},
			want: "UnschedulableAndUnresolvable: " + ErrReasonNodeConflict},
		{name: "a claim bound to a volume without node affinity fits anywhere", pod: podWithClaims("data"),
			objs: []runtime.Object{claim("data", "", "pv1"), volumeOn("pv1", "", "")}},
		{name: "a claim bound to a missing volume does not fit", pod: podWithClaims("data"),
			objs: []runtime.Object{claim("data", "", "gone")},
			want: "UnschedulableAndUnresolvable: " + ErrReasonPVNotExist},
		{name: "an unbound WaitForFirstConsumer claim with a provisioner fits", pod: podWithClaims("data"),
			objs: []runtime.Object{local, claim("data", "local-path", "")}},
		{name: "an unbound claim of a class without provisioner needs a volume on the node", pod: podWithClaims("data"),
			objs: []runtime.Object{static, claim("data", "static", ""), volumeOn("pv-elsewhere", "static", "n2")},
			want: "UnschedulableAndUnresolvable: " + ErrReasonBindConflict},
		{name: "an available volume on the node serves a claim of a class without provisioner", pod: podWithClaims("data"),
			objs: []runtime.Object{static, claim("data", "static", ""), volumeOn("pv-here", "static", "n1")}},
		{name: "two claims cannot share the one volume on the node", pod: podWithClaims("a", "b"),
			objs: []runtime.Object{static, claim("a", "static", ""), claim("b", "static", ""), volumeOn("pv-here", "static", "n1")},
			want: "UnschedulableAndUnresolvable: " + ErrReasonBindConflict},
		{name: "an unbound Immediate claim waits for the binder", pod: podWithClaims("data"),
			objs: []runtime.Object{immediate, claim("data", "fast", "")},
			want: "UnschedulableAndUnresolvable: " + ErrReasonUnboundImmediate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newPlugin(t, Args{}, tc.objs...)
			if got := schedtest.StatusString(schedtest.RunFilter(t, p, tc.pod, schedtest.NodeInfo(n1))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVolumeBindingPreBind(t *testing.T) {
	local := class("local-path", "skiff.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)
	tests := []struct {
		name string
		bind bool // the binder binds the claim while PreBind waits
		// unselect: the provisioner removes the selected-node annotation
		// while PreBind waits.
		unselect bool
		wantErr  string
	}{
		{name: "the claim is annotated with the node and binding waits until it is Bound", bind: true},
		{name: "binding gives up after the timeout", wantErr: "binding volumes"},
		{name: "a provisioner giving the node back fails binding at once", unselect: true, wantErr: `provisioning failed for PVC "data"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := claim("data", "local-path", "")
			p, cs := newPlugin(t, Args{BindTimeout: 500 * time.Millisecond}, local, data)
			p.poll = 10 * time.Millisecond
			pod := podWithClaims("data")
			state := framework.NewCycleState()
			if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			if tc.bind {
				go func() {
					time.Sleep(50 * time.Millisecond)
					bound := claim("data", "local-path", "pvc-uid-data")
					_ = p.handle.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Update(bound)
				}()
			}
			if tc.unselect {
				go func() {
					claims := p.handle.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
					time.Sleep(50 * time.Millisecond)
					marked := claim("data", "local-path", "")
					marked.Annotations = map[string]string{"volume.kubernetes.io/selected-node": "n1"}
					_ = claims.Update(marked)
					time.Sleep(50 * time.Millisecond)
					_ = claims.Update(claim("data", "local-path", ""))
				}()
			}
			st := p.PreBind(context.Background(), state, pod, "n1")
			if got := st.Message(); (tc.wantErr == "") != st.IsSuccess() || !strings.Contains(got, tc.wantErr) {
				t.Fatalf("PreBind: %v, want error %q", st, tc.wantErr)
			}
			cur, err := cs.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if cur.Annotations["volume.kubernetes.io/selected-node"] != "n1" {
				t.Fatalf("claim annotations %v, want selected-node n1", cur.Annotations)
			}
		})
	}
}

func TestPodWithoutClaimsSkipsTheFilterAndPreBind(t *testing.T) {
	p, cs := newPlugin(t, Args{})
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, podWithClaims(), nil); !st.IsSkip() {
		t.Fatalf("PreFilter of a pod without claims: %v, want Skip", st)
	}
	if st := p.PreBind(context.Background(), state, podWithClaims(), "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind of a pod without claims: %v", st)
	}
	if len(cs.Actions()) != 0 {
		t.Fatalf("API calls for a pod without claims: %v", cs.Actions())
	}
}
