package admission

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// The projected service account volume Kubernetes' ServiceAccount
// admission plugin gives each pod (BoundServiceAccountTokenVolume, GA
// since 1.22): a token the node agent requests for the pod, the cluster
// CA from the root-ca-cert-publisher's ConfigMap, and the namespace.
const (
	// TokenVolumePrefix starts the volume's name; a pod that already has
	// a volume named so keeps it, as Kubernetes does.
	TokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where in-cluster clients (client-go's
	// rest.InClusterConfig) read token, ca.crt and namespace.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMap is the ConfigMap in every namespace holding ca.crt.
	RootCAConfigMap = "kube-root-ca.crt"
	// TokenExpirationSeconds is Kubernetes' WarnOnlyBoundTokenExpirationSeconds:
	// one hour and seven seconds, a value no one asks for by hand, so the
	// token endpoint can recognise these tokens and extend their lifetime
	// for clients that never reread the file.
	TokenExpirationSeconds int64 = 3607
	// mirrorPodAnnotation marks a static pod's mirror, which never gets a
	// token (its node, not the API, defines it).
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
)

// shouldAutomount: the pod's automountServiceAccountToken wins, then its
// service account's; unset on both means mount, as on Kubernetes.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken mounts the kube-api-access volume read-only at
// TokenMountPath in every init and app container that has nothing
// mounted there yet, adding the volume if any container took it.
func mountServiceAccountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, TokenVolumePrefix) {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = TokenVolumePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: TokenMountPath}
	needed := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !mountsAt(&cs[i], TokenMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()}})
	}
}

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolumeSource is written out in full (defaultMode included), since
// admission runs after the request's defaults were applied.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	exp := TokenExpirationSeconds
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: corev1.ServiceAccountRootCAKey, Path: corev1.ServiceAccountRootCAKey}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: corev1.ServiceAccountNamespaceKey,
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}
