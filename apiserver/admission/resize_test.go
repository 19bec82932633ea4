package admission_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestClaimResize: a claim's request grows only when it is bound and its
// class allows expansion, refused otherwise with Kubernetes'
// PersistentVolumeClaimResize messages.
func TestClaimResize(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	yes := true
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "skiff.io/local-path"},
		{ObjectMeta: metav1.ObjectMeta{Name: "grow"}, Provisioner: "example.com/grow", AllowVolumeExpansion: &yes},
	} {
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claims := cs.CoreV1().PersistentVolumeClaims("default")
	mk := func(name, class string, bound bool) {
		t.Helper()
		cl, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bound {
			cl.Status.Phase = corev1.ClaimBound
			if _, err := claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	resize := func(name, size string) error {
		cl, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cl.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		_, err = claims.Update(ctx, cl, metav1.UpdateOptions{})
		return err
	}
	mk("fixed", "fixed", true)
	mk("grow", "grow", true)
	mk("pending", "grow", false)
	tests := []struct {
		claim, size string
		want        string // "" = allowed
	}{
		{"fixed", "2Gi", `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`},
		// Validation refuses first, as in Kubernetes.
		{"pending", "2Gi", `PersistentVolumeClaim "pending" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims`},
		{"grow", "2Gi", ""},
		{"fixed", "1Gi", ""}, // unchanged size: not a resize
	}
	for _, tc := range tests {
		err := resize(tc.claim, tc.size)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("resizing %s to %s: %v", tc.claim, tc.size, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("resizing %s to %s: %v, want %s", tc.claim, tc.size, err, tc.want)
		}
	}
}
