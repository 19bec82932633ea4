package podruntime

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/kubelet/keyring"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// pullCredentials reads the pod's imagePullSecrets (admission has already
// added its service account's) and returns the credentials that match the
// container's image, in the kubelet's keyring order. As the kubelet, a
// secret that cannot be read is skipped with a Warning
// FailedToRetrieveImagePullSecret event and the pull goes on without it.
func (r *Runtime) pullCredentials(ctx context.Context, pod *corev1.Pod, c *corev1.Container) []krt.Credential {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	var secrets []*corev1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		var s *corev1.Secret
		var err error
		if r.objects != nil {
			s, err = r.objects.GetSecret(ctx, pod.Namespace, ref.Name)
		}
		if r.objects == nil || err != nil {
			r.log.Warn("unable to retrieve pull secret, the image pull may not succeed", "pod", pod.Namespace+"/"+pod.Name, "secret", ref.Name, "err", err)
			failed = append(failed, pod.Namespace+"/"+ref.Name)
			continue
		}
		secrets = append(secrets, s)
	}
	if len(failed) > 0 {
		r.event(pod, c, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	ring, err := keyring.FromSecrets(secrets)
	if err != nil {
		r.log.Warn("bad image pull secret, ignored", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	return ring.Lookup(c.Image)
}

// forgetPulls drops the pull back-offs of a pod that is gone.
func (r *Runtime) forgetPulls(podUID string) {
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	for k := range r.pulls {
		if strings.HasPrefix(k, podUID+"_") {
			delete(r.pulls, k)
		}
	}
}
