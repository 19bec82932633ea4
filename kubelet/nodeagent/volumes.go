package nodeagent

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/kubelet/podruntime"
)

// LocalPathDirAnnotation on the Node tells the local-path provisioner
// (controllers/localpath) where this node keeps its volumes.
const LocalPathDirAnnotation = "skiff.io/local-path-dir"

// localPathDir is <data-dir>/agent/storage.
func localPathDir(dataDir string) string { return filepath.Join(dataDir, "agent", "storage") }

// sweepInterval is how often deleted local-path volumes' directories are
// looked for.
const sweepInterval = 30 * time.Second

func (o clientObjects) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return o.c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, getOptions)
}

func (o clientObjects) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return o.c.CoreV1().PersistentVolumes().Get(ctx, name, getOptions)
}

// sweepLocalPath removes, until ctx ends, the directories of local-path
// volumes that were deleted (reclaim policy Delete, or by hand). The node
// authorizer lets a node ask for a volume that does not exist, so a 404 is
// the proof; anything else keeps the directory.
func sweepLocalPath(ctx context.Context, client kubernetes.Interface, dir string, log *slog.Logger) {
	exists := func(ctx context.Context, name string) (bool, error) {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, name, getOptions)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		removed, err := podruntime.SweepLocalPathDirs(ctx, dir, exists)
		if err != nil {
			log.Warn("removing deleted local-path volumes", "dir", dir, "err", err)
		}
		for _, name := range removed {
			log.Info("removed the directory of a deleted local-path volume", "volume", name, "dir", dir)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
