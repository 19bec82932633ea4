package framework

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// PatchPodStatus sends a strategic-merge patch of the pod's status, retried
// a few times within a second (client-go's retry.DefaultBackoff) while the
// API server answers with a transient error, as kube-scheduler's
// util.PatchPodStatus does for the writes it makes of a pending pod's
// status: its PodScheduled condition, its nominated node, and the clearing
// of less important pods' nominations after a preemption. Without it, one
// failed write left the pod's condition or nomination stale until its next
// attempt, or a preemption failed for a passing error.
func PatchPodStatus(ctx context.Context, cs kubernetes.Interface, namespace, name string, patch []byte) error {
	return retry.OnError(retry.DefaultBackoff, Retriable, func() error {
		_, err := cs.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// Retriable reports whether a write failed for a reason that may pass at
// once (kube-scheduler's util.Retriable): an internal error or an
// unavailable API server, or a connection refused while one restarts.
func Retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionRefused(err)
}
