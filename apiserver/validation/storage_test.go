package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidatePersistentVolume(t *testing.T) {
	affinity := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}
	pv := func(m func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv1"}},
		}}
		m(v)
		return defaulted(v)
	}
	runCreate(t, []testCase{
		{name: "hostPath volume", obj: pv(func(*corev1.PersistentVolume) {})},
		{name: "local volume with node affinity", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.HostPath = nil
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/data/pv1"}
			v.Spec.NodeAffinity = affinity
		})},
		{name: "local volume needs node affinity", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.HostPath = nil
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/data/pv1"}
		}), want: []want{{"spec.nodeAffinity", required}}},
		{name: "no access modes", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.AccessModes = nil }),
			want: []want{{"spec.accessModes", required}}},
		{name: "unknown access mode", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		}),
			want: []want{{"spec.accessModes", notSupported}}},
		{name: "ReadWriteOncePod alone only", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadWriteOnce}
		}), want: []want{{"spec.accessModes", forbidden}}},
		{name: "no capacity", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.Capacity = nil }),
			want: []want{{"spec.capacity", required}}},
		{name: "capacity other than storage", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.Capacity[corev1.ResourceCPU] = resource.MustParse("1")
		}), want: []want{{"spec.capacity[cpu]", notSupported}}},
		{name: "no source", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.HostPath = nil }),
			want: []want{{"spec", required}}},
		{name: "two sources", obj: pv(func(v *corev1.PersistentVolume) {
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/x"}
			v.Spec.NodeAffinity = affinity
		}),
			want: []want{{"spec.local", forbidden}}},
		{name: "hostPath with ..", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.HostPath.Path = "/data/../etc" }),
			want: []want{{"spec.hostPath.path", invalid}}},
		{name: "bad reclaim policy", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = "Shred" }),
			want: []want{{"spec.persistentVolumeReclaimPolicy", notSupported}}},
		{name: "bad class name", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.StorageClassName = "Not_A_Name" }),
			want: []want{{"spec.storageClassName", invalid}}},
		{name: "node affinity without required", obj: pv(func(v *corev1.PersistentVolume) { v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{} }),
			want: []want{{"spec.nodeAffinity.required", required}}},
	})
	old := pv(func(v *corev1.PersistentVolume) { v.ResourceVersion = "1"; v.Spec.NodeAffinity = affinity })
	runUpdate(t, []updateCase{
		{name: "claimRef may be set", old: old, new: pv(func(v *corev1.PersistentVolume) {
			v.ResourceVersion = "1"
			v.Spec.NodeAffinity = affinity
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "c"}
		})},
		{name: "source is immutable", old: old, new: pv(func(v *corev1.PersistentVolume) {
			v.ResourceVersion = "1"
			v.Spec.NodeAffinity = affinity
			v.Spec.HostPath.Path = "/elsewhere"
		}), want: []want{{"spec.persistentvolumesource", forbidden}}},
		{name: "node affinity is immutable", old: old, new: pv(func(v *corev1.PersistentVolume) { v.ResourceVersion = "1" }),
			want: []want{{"spec.nodeAffinity", invalid}}},
	})
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	pvc := func(m func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default", ResourceVersion: "1"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		m(c)
		return defaulted(c)
	}
	runCreate(t, []testCase{
		{name: "valid", obj: pvc(func(*corev1.PersistentVolumeClaim) {})},
		{name: "no access modes", obj: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil }),
			want: []want{{"spec.accessModes", required}}},
		{name: "no storage request", obj: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil }),
			want: []want{{"spec.resources.requests[storage]", required}}},
		{name: "zero storage request", obj: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}), want: []want{{"spec.resources.requests[storage]", invalid}}},
		{name: "bad class name", obj: pvc(func(c *corev1.PersistentVolumeClaim) { name := "Bad Name"; c.Spec.StorageClassName = &name }),
			want: []want{{"spec.storageClassName", invalid}}},
		{name: "bad volume mode", obj: pvc(func(c *corev1.PersistentVolumeClaim) {
			m := corev1.PersistentVolumeMode("Tape")
			c.Spec.VolumeMode = &m
		}),
			want: []want{{"spec.volumeMode", notSupported}}},
	})
	old := pvc(func(*corev1.PersistentVolumeClaim) {})
	bound := pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv1"; c.Status.Phase = corev1.ClaimBound })
	runUpdate(t, []updateCase{
		{name: "binder sets volumeName", old: old, new: pvc(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv1" })},
		{name: "volumeName is fixed once set", old: bound, new: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeName = "pv2"
			c.Status.Phase = corev1.ClaimBound
		}), want: []want{{"spec", forbidden}}},
		{name: "access modes are fixed", old: old, new: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), want: []want{{"spec", forbidden}}},
		{name: "unbound claim may not resize", old: old, new: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}), want: []want{{"spec", forbidden}}},
		{name: "bound claim may grow", old: bound, new: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeName = "pv1"
			c.Status.Phase = corev1.ClaimBound
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		})},
		{name: "bound claim may not shrink", old: bound, new: pvc(func(c *corev1.PersistentVolumeClaim) {
			c.Spec.VolumeName = "pv1"
			c.Status.Phase = corev1.ClaimBound
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		}), want: []want{{"spec.resources.requests.storage", forbidden}}},
	})
}

func TestValidateStorageClass(t *testing.T) {
	sc := func(m func(*storagev1.StorageClass)) *storagev1.StorageClass {
		c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", ResourceVersion: "1"}, Provisioner: "skiff.io/local-path"}
		m(c)
		return defaulted(c)
	}
	runCreate(t, []testCase{
		{name: "valid", obj: sc(func(*storagev1.StorageClass) {})},
		{name: "no provisioner", obj: sc(func(c *storagev1.StorageClass) { c.Provisioner = "" }),
			want: []want{{"provisioner", required}}},
		{name: "provisioner not a qualified name", obj: sc(func(c *storagev1.StorageClass) { c.Provisioner = "a/b/c" }),
			want: []want{{"provisioner", invalid}}},
		{name: "empty parameter key", obj: sc(func(c *storagev1.StorageClass) { c.Parameters = map[string]string{"": "x"} }),
			want: []want{{"parameters", invalid}}},
		{name: "bad reclaim policy", obj: sc(func(c *storagev1.StorageClass) { p := corev1.PersistentVolumeReclaimRecycle; c.ReclaimPolicy = &p }),
			want: []want{{"reclaimPolicy", notSupported}}},
		{name: "bad binding mode", obj: sc(func(c *storagev1.StorageClass) { m := storagev1.VolumeBindingMode("Later"); c.VolumeBindingMode = &m }),
			want: []want{{"volumeBindingMode", notSupported}}},
	})
	old := sc(func(*storagev1.StorageClass) {})
	runUpdate(t, []updateCase{
		{name: "labels may change", old: old, new: sc(func(c *storagev1.StorageClass) { c.Labels = map[string]string{"a": "b"} })},
		{name: "provisioner is fixed", old: old, new: sc(func(c *storagev1.StorageClass) { c.Provisioner = "other.io/x" }),
			want: []want{{"provisioner", forbidden}}},
		{name: "parameters are fixed", old: old, new: sc(func(c *storagev1.StorageClass) { c.Parameters = map[string]string{"a": "b"} }),
			want: []want{{"parameters", forbidden}}},
		{name: "binding mode is fixed", old: old, new: sc(func(c *storagev1.StorageClass) {
			m := storagev1.VolumeBindingWaitForFirstConsumer
			c.VolumeBindingMode = &m
		}), want: []want{{"volumeBindingMode", invalid}}},
	})
}
