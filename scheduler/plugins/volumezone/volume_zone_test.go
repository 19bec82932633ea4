package volumezone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: volume}}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func volume(name string, labels ...string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		pv.Labels[labels[i]] = labels[i+1]
	}
	return pv
}

func class(name string, mode *storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "p", VolumeBindingMode: mode}
}

func node(labels ...string) *framework.NodeInfo {
	n := schedtest.MakeNode().Name("n")
	for i := 0; i+1 < len(labels); i += 2 {
		n.Label(labels[i], labels[i+1])
	}
	return schedtest.NodeInfo(n.Obj())
}

// newPlugin builds the plugin with objs loaded into the informer caches it reads.
func newPlugin(t *testing.T, objs ...runtime.Object) *VolumeZone {
	t.Helper()
	h := schedtest.Framework(t, fake.NewClientset(), fwruntime.Registry{}, nil)
	p, err := New(nil, h)
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
		default:
			t.Fatalf("unexpected object %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return p.(*VolumeZone)
}

// The cases follow kube-scheduler's TestSingleZone, TestMultiZone and
// TestWithBinding.
func TestFilter(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	objs := []runtime.Object{
		volume("pv-zone-a", v1.LabelTopologyZone, "us-west1-a"),
		volume("pv-beta-zone-a", v1.LabelFailureDomainBetaZone, "us-west1-a"),
		volume("pv-region", v1.LabelTopologyRegion, "us-west1"),
		volume("pv-beta-region", v1.LabelFailureDomainBetaRegion, "us-west1"),
		volume("pv-zones-ab", v1.LabelTopologyZone, "us-west1-a__us-west1-b"),
		volume("pv-bad-zones", v1.LabelTopologyZone, "us-west1-a__"),
		volume("pv-unlabelled"),
		claim("zone-a", "", "pv-zone-a"),
		claim("beta-zone-a", "", "pv-beta-zone-a"),
		claim("region", "", "pv-region"),
		claim("beta-region", "", "pv-beta-region"),
		claim("zones-ab", "", "pv-zones-ab"),
		claim("bad-zones", "", "pv-bad-zones"),
		claim("unlabelled", "", "pv-unlabelled"),
		claim("no-volume", "", "pv-gone"),
		claim("no-class", "", ""),
		claim("wffc", "wffc", ""),
		claim("immediate", "immediate", ""),
		claim("unset-mode", "unset-mode", ""),
		claim("missing-class", "missing-class", ""),
		class("wffc", &wffc), class("immediate", &immediate), class("unset-mode", nil),
	}
	const conflict = "UnschedulableAndUnresolvable: " + ErrReasonConflict
	zoneA := []string{v1.LabelTopologyZone, "us-west1-a", v1.LabelTopologyRegion, "us-west1"}
	for _, c := range []struct {
		name string
		pod  *v1.Pod
		node *framework.NodeInfo
		want string
	}{
		{"a pod without volumes fits", schedtest.MakePod().Name("p").Namespace("ns").Obj(), node(zoneA...), ""},
		{"a pod with volumes but no claim fits", func() *v1.Pod {
			p := podWithClaims()
			p.Spec.Volumes = []v1.Volume{{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			return p
		}(), node(zoneA...), ""},
		{"a volume of the node's zone fits", podWithClaims("zone-a"), node(zoneA...), ""},
		{"a volume of another zone does not", podWithClaims("zone-a"), node(v1.LabelTopologyZone, "us-west1-b"), conflict},
		{"a node with no zone or region label takes any volume", podWithClaims("zone-a"), node("other", "label"), ""},
		{"a node with a region but no zone does not take a zonal volume", podWithClaims("zone-a"), node(v1.LabelTopologyRegion, "us-west1"), conflict},
		{"a volume with the deprecated zone label matches the node's GA label", podWithClaims("beta-zone-a"), node(zoneA...), ""},
		{"a volume with the deprecated zone label in another zone does not", podWithClaims("beta-zone-a"), node(v1.LabelTopologyZone, "us-west1-b"), conflict},
		{"a GA-labelled volume does not match a node's deprecated label alone", podWithClaims("zone-a"), node(v1.LabelFailureDomainBetaZone, "us-west1-a"), conflict},
		{"a deprecated label on both sides matches", podWithClaims("beta-zone-a"), node(v1.LabelFailureDomainBetaZone, "us-west1-a"), ""},
		{"a regional volume fits a node of its region", podWithClaims("region"), node(zoneA...), ""},
		{"a regional volume does not fit another region", podWithClaims("region"), node(v1.LabelTopologyRegion, "us-east1"), conflict},
		{"a deprecated regional label matches the node's GA label", podWithClaims("beta-region"), node(zoneA...), ""},
		{"a volume in several zones fits the second", podWithClaims("zones-ab"), node(v1.LabelTopologyZone, "us-west1-b"), ""},
		{"a volume in several zones does not fit a third", podWithClaims("zones-ab"), node(v1.LabelTopologyZone, "us-west1-c"), conflict},
		{"a zone list with an empty entry is ignored", podWithClaims("bad-zones"), node(v1.LabelTopologyZone, "us-west1-c"), ""},
		{"an unlabelled volume fits anywhere", podWithClaims("unlabelled"), node(zoneA...), ""},
		{"every claim must match", podWithClaims("zone-a", "zones-ab"), node(v1.LabelTopologyZone, "us-west1-b"), conflict},
		{"an unbound WaitForFirstConsumer claim is skipped", podWithClaims("wffc", "zone-a"), node(zoneA...), ""},
		{"only an unbound WaitForFirstConsumer claim: skipped", podWithClaims("wffc"), node(v1.LabelTopologyZone, "us-west1-b"), ""},
		{"a missing claim", podWithClaims("gone"), node(zoneA...), `UnschedulableAndUnresolvable: persistentvolumeclaim "gone" not found`},
		{"a bound claim's missing volume", podWithClaims("no-volume"), node(zoneA...), `UnschedulableAndUnresolvable: persistentvolume "pv-gone" not found`},
		{"an unbound claim without a class", podWithClaims("no-class"), node(zoneA...), "UnschedulableAndUnresolvable: PersistentVolumeClaim had no pv name and storageClass name"},
		{"an unbound claim of a missing class", podWithClaims("missing-class"), node(zoneA...), `UnschedulableAndUnresolvable: storageclass.storage.k8s.io "missing-class" not found`},
		{"an unbound claim of a class without a binding mode", podWithClaims("unset-mode"), node(zoneA...), `UnschedulableAndUnresolvable: VolumeBindingMode not set for StorageClass "unset-mode"`},
		{"an unbound Immediate claim", podWithClaims("immediate"), node(zoneA...), "UnschedulableAndUnresolvable: PersistentVolume had no name"},
		{"a claim with no name", podWithClaims(""), node(zoneA...), "UnschedulableAndUnresolvable: PersistentVolumeClaim had no name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := newPlugin(t, objs...)
			if got := schedtest.StatusString(schedtest.RunFilter(t, pl, c.pod, c.node, c.node)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// PreFilter skips the plugin for a pod with no claim to check, as
// kube-scheduler's, so that Filter costs nothing per node then.
func TestPreFilterSkips(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	pl := newPlugin(t, claim("wffc", "wffc", ""), class("wffc", &wffc), claim("a", "", "pv-a"), volume("pv-a", v1.LabelTopologyZone, "a"))
	for _, c := range []struct {
		name string
		pod  *v1.Pod
		skip bool
	}{
		{"no volumes", schedtest.MakePod().Name("p").Namespace("ns").Obj(), true},
		{"only an unbound WaitForFirstConsumer claim", podWithClaims("wffc"), true},
		{"a bound claim with a zone", podWithClaims("a"), false},
	} {
		_, st := pl.PreFilter(t.Context(), framework.NewCycleState(), c.pod, nil)
		if st.IsSkip() != c.skip || (!c.skip && !st.IsSuccess()) {
			t.Errorf("%s: PreFilter %v, want skip %v", c.name, st, c.skip)
		}
	}
}
