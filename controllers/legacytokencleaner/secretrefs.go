package legacytokencleaner

import corev1 "k8s.io/api/core/v1"

// podSecretNames adds to names every Secret pod refers to, as Kubernetes'
// VisitPodSecretNames: image pull secrets, environment of every kind of
// container, and the volumes that take a Secret (secret and projected
// secrets, CSI node-publish secrets, and the in-tree drivers' credentials).
func podSecretNames(pod *corev1.Pod, names map[string]bool) {
	add := func(name string) {
		if name != "" {
			names[name] = true
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(s.Name)
	}
	env := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add(r.Name)
		}
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil:
			add(s.Secret.SecretName)
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		case s.CSI != nil:
			ref(s.CSI.NodePublishSecretRef)
		case s.AzureFile != nil:
			add(s.AzureFile.SecretName)
		case s.CephFS != nil:
			ref(s.CephFS.SecretRef)
		case s.Cinder != nil:
			ref(s.Cinder.SecretRef)
		case s.FlexVolume != nil:
			ref(s.FlexVolume.SecretRef)
		case s.ISCSI != nil:
			ref(s.ISCSI.SecretRef)
		case s.RBD != nil:
			ref(s.RBD.SecretRef)
		case s.ScaleIO != nil:
			ref(s.ScaleIO.SecretRef)
		case s.StorageOS != nil:
			if s.StorageOS.SecretRef != nil {
				add(s.StorageOS.SecretRef.Name)
			}
		}
	}
}
