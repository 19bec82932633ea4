package podruntime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// apiObjects reads objects from a clientset, as the agent's getter does.
type apiObjects struct{ c kubernetes.Interface }

func (o apiObjects) GetConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return o.c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}
func (o apiObjects) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return o.c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
func (o apiObjects) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return o.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}
func (o apiObjects) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return o.c.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

func TestClaimVolumes(t *testing.T) {
	dir := t.TempDir()
	boundClaim := func(name, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	}
	localPath := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": LocalPathProvisioner}},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: filepath.Join(dir, "storage", "pvc-1")}}}}
	staticMissing := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "static"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: filepath.Join(dir, "absent")}}}}
	create := corev1.HostPathDirectoryOrCreate
	hostPath := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "host"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(dir, "host"), Type: &create}}}}
	nfs := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "nfs"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}}}
	pending := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "ns"}}
	client := fake.NewClientset(boundClaim("local", "pvc-1"), boundClaim("static", "static"), boundClaim("host", "host"),
		boundClaim("nfs", "nfs"), boundClaim("lost", "gone"), pending, localPath, staticMissing, hostPath, nfs)
	r := &Runtime{objects: apiObjects{client}}
	pod := testPod()
	pod.Namespace = "ns"
	for _, c := range []string{"local", "static", "host", "nfs", "lost", "pending", "missing"} {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	failed := map[string]error{}
	paths := r.claimVolumes(context.Background(), pod, failed)
	if paths["local"] != filepath.Join(dir, "storage", "pvc-1") || paths["host"] != filepath.Join(dir, "host") {
		t.Fatalf("paths %v (failed %v)", paths, failed)
	}
	for _, d := range []string{paths["local"], paths["host"]} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o777 {
			t.Errorf("%s not created world-writable: %v %v", d, st, err)
		}
	}
	for name, want := range map[string]string{
		"static":  "no such file",
		"nfs":     "only hostPath and local volumes",
		"lost":    `persistentvolume "gone" of claim "lost" not found`,
		"pending": `persistentvolumeclaim "pending" is not bound`,
		"missing": `persistentvolumeclaim "missing" not found`,
	} {
		if err := failed[name]; err == nil || !errors.Is(err, errConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want a config error containing %q", name, err, want)
		}
	}
}

func TestSweepLocalPathDirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"pvc-live", "pvc-deleted", "pvc-unknown"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(_ context.Context, name string) (bool, error) {
		switch name {
		case "pvc-live":
			return true, nil
		case "pvc-deleted":
			return false, nil
		}
		return false, apierrors.NewForbidden(corev1.Resource("persistentvolumes"), name, errors.New("no"))
	}
	removed, err := SweepLocalPathDirs(context.Background(), dir, exists)
	if err != nil || len(removed) != 1 || removed[0] != "pvc-deleted" {
		t.Fatalf("removed %v, %v; want [pvc-deleted]", removed, err)
	}
	for d, want := range map[string]bool{"pvc-live": true, "pvc-deleted": false, "pvc-unknown": true} {
		if _, err := os.Stat(filepath.Join(dir, d)); (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", d, err == nil, want)
		}
	}
	if removed, err := SweepLocalPathDirs(context.Background(), filepath.Join(dir, "none"), exists); err != nil || removed != nil {
		t.Errorf("a missing storage directory: %v %v", removed, err)
	}
}
