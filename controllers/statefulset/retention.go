package statefulset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/controllers/controllerref"
)

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// The persistentVolumeClaimRetentionPolicy is carried out through owner
// references that the garbage collector follows, as in Kubernetes: a claim
// owned by the set goes with the set, one owned by its pod goes with the
// pod. Which owner a claim should have depends on the policy and on
// whether its pod is scaled down, and both change after the claim is
// made, so every sync brings the claims of live and condemned pods in line:
//
//	whenScaled Retain, whenDeleted Retain: neither
//	whenScaled Retain, whenDeleted Delete: the set
//	whenScaled Delete, whenDeleted Retain: the pod, once scaled down
//	whenScaled Delete, whenDeleted Delete: the pod once scaled down, else the set
//
// Owners are controller references, one at a time. A claim referring to
// an earlier set or pod of the same name (another UID) is left alone, and
// one controlled by something else loses only the set's and pod's refs.

// wantOwners says whether a claim should be owned by the set and by its pod.
func wantOwners(set *appsv1.StatefulSet, scaledDown bool) (bySet, byPod bool) {
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	if p == nil {
		return false, false
	}
	deleteScaled := p.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	deleteWithSet := p.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	switch {
	case deleteScaled && deleteWithSet:
		return !scaledDown, scaledDown
	case deleteScaled:
		return false, scaledDown
	default:
		return deleteWithSet, false
	}
}

// retaining is true when the policy keeps claims whatever happens.
func retaining(set *appsv1.StatefulSet) bool {
	bySet, _ := wantOwners(set, false)
	_, byPod := wantOwners(set, true)
	return !bySet && !byPod
}

func refersTo(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// ownedBy is whether claim has a reference (controlling or not) to obj.
func ownedBy(claim *corev1.PersistentVolumeClaim, obj metav1.Object) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.UID == obj.GetUID() {
			return true
		}
	}
	return false
}

// foreignController is whether, under a policy that deletes claims,
// something other than the set and pod controls claim.
func foreignController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if retaining(set) {
		return false
	}
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		if refersTo(ref, set, controllerKind) || refersTo(ref, pod, podKind) {
			continue
		}
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// claimOwnersUpToDate is whether claim's owners follow the policy; a claim
// with a stale reference to a namesake set or pod is not touched.
func claimOwnersUpToDate(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) bool {
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		if (refersTo(ref, set, controllerKind) && ref.UID != set.UID) || (refersTo(ref, pod, podKind) && ref.UID != pod.UID) {
			return true // an earlier set's or pod's: leave it to the garbage collector
		}
	}
	if foreignController(claim, set, pod) {
		return !ownedBy(claim, set) && !ownedBy(claim, pod)
	}
	for _, ref := range claim.OwnerReferences {
		if (ref.UID == set.UID || ref.UID == pod.UID) && (ref.Controller == nil || !*ref.Controller) {
			return false // made by an older rule: becomes a controller reference
		}
	}
	bySet, byPod := wantOwners(set, scaledDown)
	return ownedBy(claim, set) == bySet && ownedBy(claim, pod) == byPod
}

// setClaimOwners rewrites the set's and pod's references on claim as the
// policy wants them.
func setClaimOwners(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) {
	foreign := foreignController(claim, set, pod)
	refs := make([]metav1.OwnerReference, 0, len(claim.OwnerReferences)+1)
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		if !refersTo(ref, set, controllerKind) && !refersTo(ref, pod, podKind) {
			refs = append(refs, *ref)
		}
	}
	if !foreign {
		bySet, byPod := wantOwners(set, scaledDown)
		if bySet {
			refs = append(refs, controllerref.New(set, controllerKind))
		}
		if byPod {
			refs = append(refs, controllerref.New(pod, podKind))
		}
	}
	claim.OwnerReferences = refs
}

// matchClaimRetention brings the owners of pod's claims in line with the
// set's retention policy; scaledDown says the pod's ordinal is out of range.
func (c *Controller) matchClaimRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) error {
	ordinal, ok := ordinalOf(set, pod)
	if !ok {
		return nil
	}
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(set, t.Name, ordinal)
		claim, err := c.claimLister.PersistentVolumeClaims(set.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if claimOwnersUpToDate(claim, set, pod, scaledDown) {
			continue
		}
		claim = claim.DeepCopy()
		setClaimOwners(claim, set, pod, scaledDown)
		if _, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s/%s owners: %w", set.Namespace, name, err)
		}
	}
	return nil
}
