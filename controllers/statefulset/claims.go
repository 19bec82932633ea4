package statefulset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/skiffkube/skiff/controllers/controllerref"
)

// ClaimName is the claim of template for ordinal: <template>-<set>-<ordinal>.
func ClaimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, ordinal)
}

// claimFor builds the claim of one volumeClaimTemplate for ordinal. As in
// Kubernetes it keeps the template's metadata (labels, annotations,
// finalizers, owner references) and adds the set's selector to its labels;
// only what the API server assigns is left out. With whenDeleted: Delete the
// set owns it (it goes with the set), unless the template names another
// controller; by default (Retain) nothing does and it outlives pods and set.
func claimFor(set *appsv1.StatefulSet, t *corev1.PersistentVolumeClaim, ordinal int) *corev1.PersistentVolumeClaim {
	claim := t.DeepCopy()
	claim.Name, claim.Namespace, claim.GenerateName = ClaimName(set, t.Name, ordinal), set.Namespace, ""
	claim.UID, claim.ResourceVersion, claim.Generation, claim.CreationTimestamp = "", "", 0, metav1.Time{}
	claim.DeletionTimestamp, claim.DeletionGracePeriodSeconds, claim.ManagedFields = nil, nil, nil
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if set.Spec.Selector != nil {
		for k, v := range set.Spec.Selector.MatchLabels {
			claim.Labels[k] = v
		}
	}
	claim.Status = corev1.PersistentVolumeClaimStatus{}
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType &&
		metav1.GetControllerOfNoCopy(claim) == nil {
		claim.OwnerReferences = append(claim.OwnerReferences, controllerref.New(set, controllerKind))
	}
	return claim
}

// withClaimVolumes points the pod's volumes named after the claim templates
// at the ordinal's claims (replacing a template volume of the same name).
func withClaimVolumes(set *appsv1.StatefulSet, pod *corev1.Pod, ordinal int) {
	for _, t := range set.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(set, t.Name, ordinal)}}}
		replaced := false
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == t.Name {
				pod.Spec.Volumes[i], replaced = vol, true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
		}
	}
}

// ensureClaims creates the ordinal's missing claims before its pod. As v1.33's
// createPersistentVolumeClaims, every template is tried, each creation (or
// failed look-up) recorded on the set, and the failures returned joined with
// Kubernetes' wording; a claim still being deleted (its previous pod's,
// whenScaled: Delete) makes the pod wait. For a pod about to be created
// (creating), a claim under whenScaled: Delete still owned by an earlier pod
// of that name, which the garbage collector is about to delete under the new
// pod, makes it wait first, silently and before any claim is made, as v1.33's
// PodClaimIsStale.
func (c *Controller) ensureClaims(ctx context.Context, set *appsv1.StatefulSet, ordinal int, podName string, creating bool) error {
	templates := set.Spec.VolumeClaimTemplates
	wants := make([]*corev1.PersistentVolumeClaim, len(templates))
	curs := make([]*corev1.PersistentVolumeClaim, len(templates))
	getErrs := make([]error, len(templates))
	stale := creating && deletesScaledClaims(set)
	for i := range templates {
		wants[i] = claimFor(set, &templates[i], ordinal)
		curs[i], getErrs[i] = c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Get(ctx, wants[i].Name, metav1.GetOptions{})
		switch err := getErrs[i]; {
		case !stale || apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("get claim %s/%s: %w", set.Namespace, wants[i].Name, err)
		case ownedByPodNamed(curs[i], podName):
			return fmt.Errorf("pod %s: persistentvolumeclaim %s %w %s", podName, wants[i].Name, errStaleClaim, podName)
		}
	}
	var errs []error
	for i, want := range wants {
		switch err := getErrs[i]; {
		case err == nil:
			if curs[i].DeletionTimestamp != nil {
				errs = append(errs, fmt.Errorf("pvc %s is being deleted", want.Name))
			}
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("failed to retrieve PVC %s: %w", want.Name, err))
			c.claimEvent(set, want.Name, podName, err)
		default:
			_, err = c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, want, metav1.CreateOptions{})
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", want.Name, err))
			}
			// A claim made meanwhile by someone else (AlreadyExists) gets no claim
			// event, as in v1.33, but is not used unseen either: the pod waits
			// (reported as not created) for the next pass, which checks that claim
			// as any existing one: being deleted, or an earlier pod's.
			if !apierrors.IsAlreadyExists(err) {
				c.claimEvent(set, want.Name, podName, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// claimEvent records the outcome of creating a pod's claim on the set, as
// Kubernetes' recordClaimEvent.
func (c *Controller) claimEvent(set *appsv1.StatefulSet, claim, pod string, err error) {
	if err != nil {
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonFailedCreate, "create Claim %s for Pod %s in StatefulSet %s failed error: %s", claim, pod, set.Name, err)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Claim %s Pod %s in StatefulSet %s success", claim, pod, set.Name)
}

// errStaleClaim makes a pod wait, silently as in Kubernetes, for its claim to
// be done with an earlier pod.
var errStaleClaim = errors.New("still belongs to an earlier pod")

// deletesScaledClaims is whether the retention policy's whenScaled is Delete.
func deletesScaledClaims(set *appsv1.StatefulSet) bool {
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	return p != nil && p.WhenScaled == appsv1.DeletePersistentVolumeClaimRetentionPolicyType
}

// ownedByPodNamed is whether claim has an owner reference to a pod called name.
func ownedByPodNamed(claim *corev1.PersistentVolumeClaim, name string) bool {
	for i := range claim.OwnerReferences {
		ref := &claim.OwnerReferences[i]
		if ref.Kind == podKind.Kind && ref.APIVersion == podKind.GroupVersion().String() && ref.Name == name {
			return true
		}
	}
	return false
}
