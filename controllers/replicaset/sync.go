package replicaset

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/controllers/controllerref"
	"github.com/skiffkube/skiff/controllers/podstate"
	"github.com/skiffkube/skiff/controllers/slowstart"
)

// sync makes one ReplicaSet right. It is safe to call with any key at any time.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // a malformed key never becomes valid
	}
	cached, err := c.rsLister.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	rs := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || selector.Empty() {
		// The apiserver rejects these; a bad object in the cache must not make us own every pod.
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "InvalidSelector", "invalid selector: %v", err)
		return nil
	}
	// Read expectations before listing, so pods observed between the two reads are not missed.
	satisfied := c.exp.Satisfied(key)

	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for _, p := range all {
		if podstate.IsActive(p) {
			active = append(active, p)
		}
	}
	pods, err := c.claimPods(ctx, rs, selector, active)
	if err != nil {
		return err
	}

	var manageErr error
	if satisfied && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, pods, rs)
	}
	status := calculateStatus(rs, pods, manageErr, c.now())
	updated, err := c.updateStatus(ctx, rs, status)
	if err != nil {
		return err
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == replicasOf(updated) && updated.Status.AvailableReplicas != replicasOf(updated) {
		// Every pod is ready but some are not yet available: look again when they will be.
		c.queue.AddAfter(key, secondsDuration(updated.Spec.MinReadySeconds))
	}
	return manageErr
}

func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	objs := make([]metav1.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	cl := controllerref.Claimer{
		Owner:    rs,
		OwnerGVK: c.kind,
		Selector: selector,
		Patch: func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		},
		CanAdopt: controllerref.RecheckOwner(rs, func(ctx context.Context) (metav1.Object, error) {
			return c.rsClient(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		}),
	}
	claimed, err := cl.Claim(ctx, objs)
	out := make([]*corev1.Pod, len(claimed))
	for i, o := range claimed {
		out[i] = o.(*corev1.Pod)
	}
	return out, err
}

// manageReplicas creates or deletes pods so that len(pods) moves towards spec.replicas, at most
// burst per sync.
func (c *Controller) manageReplicas(ctx context.Context, key string, pods []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	diff := len(pods) - int(replicasOf(rs))
	switch {
	case diff < 0:
		n := min(-diff, c.burst)
		// Expect first: the informer may deliver a created pod before Create returns.
		c.exp.ExpectCreations(key, n)
		_, created, err := slowstart.Run(n, func(int) error { return c.createPod(ctx, rs) })
		for i := created; i < n; i++ {
			// Creates that were skipped or failed will never be observed.
			c.exp.CreationObserved(key)
		}
		return firstError(err)
	case diff > 0:
		n := min(diff, c.burst)
		victims := podsToDelete(pods, c.relatedPods(rs), n, c.now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = p.Namespace + "/" + p.Name
		}
		c.exp.ExpectDeletions(key, keys)
		var wg sync.WaitGroup
		errs := make([]error, len(victims))
		for i, p := range victims {
			wg.Go(func() {
				if err := c.deletePodFor(ctx, rs, p); err != nil {
					// The informer will not observe this deletion: the call failed, or the pod was
					// already gone (its removal may have been delivered before it was expected).
					c.exp.DeletionObserved(key, keys[i])
					if !apierrors.IsNotFound(err) {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// firstError keeps one of a failed batch's errors. The error becomes the ReplicaFailure
// condition's message (copied onto the Deployment too), and Kubernetes reports one error there,
// not the same quota refusal once per call of the batch.
func firstError(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := joined.Unwrap(); len(errs) > 0 {
			return errs[0]
		}
	}
	return err
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod := PodFromTemplate(rs, c.kind)
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if isNamespaceTerminating(err) {
			return nil
		}
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.recorder.Eventf(rs, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", created.Name)
	return nil
}

func (c *Controller) deletePodFor(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	uid := pod.UID
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err // already gone: no event, and not a failure of this sync
		}
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.recorder.Eventf(rs, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", pod.Name)
	return nil
}

// PodFromTemplate builds the pod a ReplicaSet creates: the template's metadata and spec, a generated
// name prefixed with the ReplicaSet's, and a controller reference back to it, naming kind (the kind
// the ReplicaSet stands for).
func PodFromTemplate(rs *appsv1.ReplicaSet, kind schema.GroupVersionKind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(rs, kind)},
		},
		Spec: t.Spec,
	}
}
