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
// authorizer lets a node read the local-path volumes placed on it (pinned
// to its kubernetes.io/hostname) and, as Kubernetes, refuses a volume that
// does not exist with 403: a directory here was made for a volume pinned to
// this node, so a 403 (or a 404 from an older server) is the proof it is
// gone. When the node's hostname label is not its name the volumes made for
// it are pinned to that label, which the authorizer does not follow: then
// only a 404 counts, and directories stay. Anything else keeps the
// directory.
func sweepLocalPath(ctx context.Context, client kubernetes.Interface, dir string, trustForbidden bool, log *slog.Logger) {
	if !trustForbidden {
		log.Warn("the node's kubernetes.io/hostname label is not its name: deleted local-path volumes' directories are kept", "dir", dir)
	}
	exists := func(ctx context.Context, name string) (bool, error) {
		_, err := client.CoreV1().PersistentVolumes().Get(ctx, name, getOptions)
		if apierrors.IsNotFound(err) || (trustForbidden && apierrors.IsForbidden(err)) {
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
