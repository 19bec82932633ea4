package podruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// VolumeGetter reads the claims and volumes behind persistentVolumeClaim
// volumes. The agent's ObjectGetter implements it; without it such pods
// wait with CreateContainerConfigError.
type VolumeGetter interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// LocalPathProvisioner is the built-in provisioner whose volumes are
// directories this agent creates on first mount (controllers/localpath).
const LocalPathProvisioner = "skiff.io/local-path"

// claimVolumes resolves each persistentVolumeClaim volume to the host
// directory of the volume its claim is bound to, creating it where the
// volume is a local-path one (or a hostPath of type DirectoryOrCreate).
// Volumes that cannot be resolved are added to failed.
func (r *Runtime) claimVolumes(ctx context.Context, pod *corev1.Pod, failed map[string]error) map[string]string {
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		p, err := r.claimPath(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			failed[v.Name] = err
			continue
		}
		paths[v.Name] = p
	}
	return paths
}

func (r *Runtime) claimPath(ctx context.Context, namespace, claimName string) (string, error) {
	vg, ok := r.objects.(VolumeGetter)
	if !ok {
		return "", fmt.Errorf("%w: persistentvolumeclaim %q: this agent has no access to PersistentVolumeClaims", errConfig, claimName)
	}
	claim, err := vg.GetPersistentVolumeClaim(ctx, namespace, claimName)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: persistentvolumeclaim %q not found", errConfig, claimName)
	}
	if err != nil {
		return "", err
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("%w: persistentvolumeclaim %q is not bound", errConfig, claimName)
	}
	pv, err := vg.GetPersistentVolume(ctx, claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("%w: persistentvolume %q of claim %q not found", errConfig, claim.Spec.VolumeName, claimName)
	}
	if err != nil {
		return "", err
	}
	return volumeDir(pv)
}

// volumeDir is the host directory of a hostPath or local volume, created
// when the agent owns it (a local-path volume, or DirectoryOrCreate).
func volumeDir(pv *corev1.PersistentVolume) (string, error) {
	var dir string
	create := pv.Annotations["pv.kubernetes.io/provisioned-by"] == LocalPathProvisioner
	switch {
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
		if t := pv.Spec.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
			create = true
		}
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("%w: persistentvolume %q: only hostPath and local volumes are supported by this agent", errConfig, pv.Name)
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: persistentvolume %q: path %q is not absolute", errConfig, pv.Name, dir)
	}
	if create {
		// World-writable like an emptyDir, so that a non-root container
		// can write its data (as local-path-provisioner does).
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return "", fmt.Errorf("persistentvolume %q: %w", pv.Name, err)
		}
	} else if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%w: persistentvolume %q: %w", errConfig, pv.Name, err)
	}
	return dir, nil
}

// VolumeExists reports whether a persistent volume still exists; an error
// means the answer is unknown.
type VolumeExists func(ctx context.Context, name string) (bool, error)

// SweepLocalPathDirs removes the directories under dir (the node's
// local-path storage directory, <data-dir>/agent/storage) whose volume no
// longer exists: the Delete reclaim of a local-path volume, finished on the
// node. It returns the names removed.
func SweepLocalPathDirs(ctx context.Context, dir string, exists VolumeExists) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		ok, err := exists(ctx, e.Name())
		if err != nil || ok {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
