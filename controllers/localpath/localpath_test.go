package localpath

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func TestProvisioning(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	retain := corev1.PersistentVolumeReclaimRetain
	localClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path"}, Provisioner: Provisioner, VolumeBindingMode: &wffc}
	keepClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Provisioner: Provisioner, VolumeBindingMode: &wffc, ReclaimPolicy: &retain}
	otherClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Provisioner: "example.com/other", VolumeBindingMode: &wffc}
	nowClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "now"}, Provisioner: Provisioner, VolumeBindingMode: &immediate}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "host-1"},
		Annotations: map[string]string{DirAnnotation: "/srv/skiff/agent/storage"}}}
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	relative := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", Annotations: map[string]string{DirAnnotation: "storage"}}}
	claim := func(class, node string, modify ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "u1"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
				StorageClassName: &class,
			},
		}
		c.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": Provisioner}
		if node != "" {
			c.Annotations["volume.kubernetes.io/selected-node"] = node
		}
		for _, m := range modify {
			m(c)
		}
		return c
	}
	tests := []struct {
		name      string
		claim     *corev1.PersistentVolumeClaim
		wantPath  string // "" = no volume
		wantHost  string
		wantPol   corev1.PersistentVolumeReclaimPolicy
		wantEvent string
		// wantUnselected: the claim's selected-node annotation is removed
		// (rescheduling); otherwise it is kept.
		wantUnselected bool
	}{
		{name: "a claim on a node gets a volume in the node's directory", claim: claim("local-path", "n1"),
			wantPath: "/srv/skiff/agent/storage/pvc-u1", wantHost: "host-1", wantPol: corev1.PersistentVolumeReclaimDelete, wantEvent: "ProvisioningSucceeded"},
		{name: "a class's reclaim policy is the volume's", claim: claim("keep", "n1"),
			wantPath: "/srv/skiff/agent/storage/pvc-u1", wantHost: "host-1", wantPol: corev1.PersistentVolumeReclaimRetain},
		{name: "a node that names no directory fails and is given back to the scheduler", claim: claim("local-path", "n2"),
			wantEvent:      `ProvisioningFailed failed to provision volume with StorageClass "local-path": node "n2" has no skiff.io/local-path-dir annotation`,
			wantUnselected: true},
		{name: "a node with a relative directory fails and is given back to the scheduler", claim: claim("local-path", "n3"),
			wantEvent:      `ProvisioningFailed failed to provision volume with StorageClass "local-path": node "n3": skiff.io/local-path-dir "storage" is not an absolute path`,
			wantUnselected: true},
		{name: "a selected node that does not exist is given back to the scheduler", claim: claim("local-path", "gone"),
			wantEvent:      `ProvisioningFailed failed to provision volume with StorageClass "local-path": failed to get target node: node "gone" not found`,
			wantUnselected: true},
		{name: "a claim with a selector is not provisioned", claim: claim("local-path", "n1", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		}), wantEvent: `ProvisioningFailed failed to provision volume with StorageClass "local-path": claim Selector is not supported`},
		{name: "a Block claim is not provisioned", claim: claim("local-path", "n1", func(c *corev1.PersistentVolumeClaim) {
			block := corev1.PersistentVolumeBlock
			c.Spec.VolumeMode = &block
		}), wantEvent: `ProvisioningFailed failed to provision volume with StorageClass "local-path": volumeMode Block is not supported: local-path volumes are filesystems (directories) only`},
		{name: "no volume before the scheduler picks a node", claim: claim("local-path", "")},
		{name: "another provisioner's class is not served", claim: claim("other", "n1")},
		{name: "ReadWriteMany cannot be served", claim: claim("local-path", "n1", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), wantEvent: "ProvisioningFailed"},
		{name: "an Immediate class is refused with the reason", claim: claim("now", ""), wantEvent: "ProvisioningFailed"},
		{name: "no volume while the binder may still find an existing one", claim: claim("local-path", "n1", func(c *corev1.PersistentVolumeClaim) {
			delete(c.Annotations, "volume.kubernetes.io/storage-provisioner")
		})},
		{name: "a bound claim is left alone", claim: claim("local-path", "n1", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-x" })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.claim, localClass, keepClass, otherClass, nowClass, node, bare, relative}
			client := controllertest.NewClient(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			rec := record.NewFakeRecorder(10)
			c, err := New(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(),
				f.Storage().V1().StorageClasses(), f.Core().V1().Nodes(), rec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			controllertest.Load(t, f.Core().V1().PersistentVolumeClaims().Informer(), tc.claim)
			controllertest.Load(t, f.Storage().V1().StorageClasses().Informer(), localClass, keepClass, otherClass, nowClass)
			controllertest.Load(t, f.Core().V1().Nodes().Informer(), node, bare, relative)
			if err := c.sync(context.Background(), "ns/data"); err != nil {
				t.Fatal(err)
			}
			pvs, _ := client.CoreV1().PersistentVolumes().List(context.Background(), metav1.ListOptions{})
			if tc.wantPath == "" {
				if len(pvs.Items) != 0 {
					t.Fatalf("volumes %v, want none", pvs.Items)
				}
			} else {
				if len(pvs.Items) != 1 {
					t.Fatalf("%d volumes, want 1", len(pvs.Items))
				}
				pv := pvs.Items[0]
				terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
				if pv.Name != "pvc-u1" || pv.Spec.Local == nil || pv.Spec.Local.Path != tc.wantPath ||
					terms[0].MatchExpressions[0].Values[0] != tc.wantHost || pv.Spec.PersistentVolumeReclaimPolicy != tc.wantPol ||
					pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != "u1" || pv.Spec.Capacity.Storage().String() != "3Gi" ||
					pv.Annotations["pv.kubernetes.io/provisioned-by"] != Provisioner {
					t.Fatalf("volume %+v", pv)
				}
			}
			if ev := strings.Join(controllertest.Events(rec.Events), "\n"); tc.wantEvent != "" && !strings.Contains(ev, tc.wantEvent) {
				t.Errorf("events %q, want %s", ev, tc.wantEvent)
			}
			got, err := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, selected := got.Annotations["volume.kubernetes.io/selected-node"]
			if had := tc.claim.Annotations["volume.kubernetes.io/selected-node"] != ""; had && selected == tc.wantUnselected {
				t.Errorf("claim annotations %v: selected-node removed %v, want %v", got.Annotations, !selected, tc.wantUnselected)
			}
		})
	}
}
