package volumerestrictions

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiffkube/skiff/scheduler/framework"
	fwruntime "github.com/skiffkube/skiff/scheduler/framework/runtime"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

func usingClaim(name, uid, claim string) *v1.Pod {
	p := schedtest.MakePod().Name(name).Namespace("ns").UID(uid).Obj()
	p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	return p
}

func TestReadWriteOncePodClaimsAreExclusive(t *testing.T) {
	claims := []*v1.PersistentVolumeClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "ns"}, Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}}},
	}
	h := schedtest.Framework(t, fake.NewClientset(), fwruntime.Registry{}, nil)
	for _, c := range claims {
		if err := h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(nil, h)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*VolumeRestrictions)
	holder := usingClaim("holder", "uid-holder", "solo")
	sharer := usingClaim("sharer", "uid-sharer", "shared")
	n1 := schedtest.NodeInfo(schedtest.MakeNode().Name("n1").Obj(), holder, sharer)
	n2 := schedtest.NodeInfo(schedtest.MakeNode().Name("n2").Obj())
	ctx := context.Background()

	// A ReadWriteOnce claim is no business of this plugin.
	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, usingClaim("p", "uid-p", "shared"), []*framework.NodeInfo{n1, n2}); !st.IsSkip() {
		t.Errorf("a pod with a ReadWriteOnce claim: PreFilter %v, want Skip", st)
	}
	// The holder itself (a retry of a placed pod) does not conflict with itself.
	cs = framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, holder, []*framework.NodeInfo{n1, n2}); !st.IsSuccess() || !pl.Filter(ctx, cs, holder, n2).IsSuccess() {
		t.Errorf("the holder against itself: %v", st)
	}
	// A second user fits no node, not even one without the holder.
	second := usingClaim("second", "uid-second", "solo")
	cs = framework.NewCycleState()
	if _, st := pl.PreFilter(ctx, cs, second, []*framework.NodeInfo{n1, n2}); !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, ni := range []*framework.NodeInfo{n1, n2} {
		if got := schedtest.StatusString(pl.Filter(ctx, cs, second, ni)); got != "Unschedulable: "+ErrReasonReadWriteOncePodConflict {
			t.Errorf("second user on %s: %q", ni.NodeName(), got)
		}
	}
	// Preemption removing the holder frees the claim; adding it back takes it.
	if st := pl.RemovePod(ctx, cs, second, framework.NewPodInfo(holder), n1); !st.IsSuccess() || !pl.Filter(ctx, cs, second, n2).IsSuccess() {
		t.Errorf("with the holder removed: %v / %v", st, pl.Filter(ctx, cs, second, n2))
	}
	pl.AddPod(ctx, cs, second, framework.NewPodInfo(holder), n1)
	if pl.Filter(ctx, cs, second, n2).IsSuccess() {
		t.Errorf("with the holder added back the second user fits")
	}
}
