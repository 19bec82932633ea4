package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testClaim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		StorageClassName: class,
	}}
}

// TestDefaultStorageClass: the server starts with the local-path class
// marked default, and a claim naming no class gets the default one; "" means
// "no class" and is kept; with two defaults the newer wins. New claims and
// volumes carry the in-use protection finalizers.
func TestDefaultStorageClass(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, "local-path", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the local-path class was not created at start: %v", err)
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Provisioner != "skiff.io/local-path" ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Fatalf("local-path class: %+v", sc)
	}

	c, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testClaim("defaulted", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "local-path" {
		t.Fatalf("claim without a class got %v, want local-path", c.Spec.StorageClassName)
	}
	if c.Status.Phase != corev1.ClaimPending {
		t.Errorf("new claim phase %q, want Pending", c.Status.Phase)
	}
	if len(c.Finalizers) != 1 || c.Finalizers[0] != "kubernetes.io/pvc-protection" {
		t.Errorf("new claim finalizers %v, want kubernetes.io/pvc-protection", c.Finalizers)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Finalizers) != 1 || pv.Finalizers[0] != "kubernetes.io/pv-protection" || pv.Status.Phase != corev1.VolumePending ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("new volume: finalizers %v, phase %s, reclaim %s; want pv-protection, Pending, Retain", pv.Finalizers, pv.Status.Phase, pv.Spec.PersistentVolumeReclaimPolicy)
	}
	empty := ""
	c, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testClaim("no-class", &empty), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "" {
		t.Fatalf(`claim with class "" got %v`, c.Spec.StorageClassName)
	}

	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	fast := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/fast"}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, fast, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err = cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, testClaim("newest-default", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "fast" {
		t.Fatalf("with two defaults the claim got %v, want the newer (fast)", c.Spec.StorageClassName)
	}

	// Bad input: a claim without a size is refused whole.
	bad := testClaim("no-size", nil)
	bad.Spec.Resources.Requests = nil
	if _, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("claim without a storage request: got %v, want 422 Invalid", err)
	}
}
