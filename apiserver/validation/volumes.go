package validation

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes returns the set of declared volume names for the mount
// checks, and the problems with the volumes themselves.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(namePath, v.Name))
		default:
			errs = append(errs, dns1123Label(v.Name, namePath)...)
		}
		names.Insert(v.Name)
		errs = append(errs, validateVolumeSource(&v.VolumeSource, idxPath)...)
	}
	return names, errs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := setVolumeSources(src)
	switch len(set) {
	case 0:
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	case 1:
	default:
		return field.ErrorList{field.Forbidden(fldPath.Child(set[1]), "may not specify more than 1 volume type")}
	}
	switch {
	case src.HostPath != nil:
		if src.HostPath.Path == "" {
			errs = append(errs, field.Required(fldPath.Child("hostPath", "path"), ""))
		}
	case src.ConfigMap != nil:
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("configMap", "name"), ""))
		}
		errs = append(errs, validateMode(src.ConfigMap.DefaultMode, fldPath.Child("configMap", "defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, fldPath.Child("configMap", "items"))...)
	case src.Secret != nil:
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(fldPath.Child("secret", "secretName"), ""))
		}
		errs = append(errs, validateMode(src.Secret.DefaultMode, fldPath.Child("secret", "defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, fldPath.Child("secret", "items"))...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.EmptyDir != nil:
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case src.Projected != nil:
		errs = append(errs, validateMode(src.Projected.DefaultMode, fldPath.Child("projected", "defaultMode"))...)
	case src.DownwardAPI != nil:
		errs = append(errs, validateMode(src.DownwardAPI.DefaultMode, fldPath.Child("downwardAPI", "defaultMode"))...)
		errs = append(errs, validateDownwardAPIFiles(src.DownwardAPI.Items, fldPath.Child("downwardAPI", "items"))...)
	}
	return errs
}

// Fields the downward API resolves (Kubernetes' lists): environment
// variables take single values, volume files also whole label and
// annotation maps. Either takes one label or annotation as
// metadata.labels['key'].
var (
	envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}
	volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
)

// validateObjectFieldSelector checks a fieldRef against the fields its user
// can resolve, so a pod the node agent could never start is refused here.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, supported []string, fldPath *field.Path) field.ErrorList {
	switch {
	case fs.APIVersion == "":
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	case fs.FieldPath == "":
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	case fs.APIVersion != "v1":
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if base, key, ok := strings.Cut(strings.TrimSuffix(fs.FieldPath, "']"), "['"); ok && base != "" && strings.HasSuffix(fs.FieldPath, "']") {
		var msgs []string
		switch base {
		case "metadata.annotations":
			msgs = validation.IsQualifiedName(strings.ToLower(key))
		case "metadata.labels":
			msgs = validation.IsQualifiedName(key)
		default:
			return field.ErrorList{field.Invalid(fldPath, base, "does not support subscript")}
		}
		var errs field.ErrorList
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(fldPath, key, msg))
		}
		return errs
	}
	if !slices.Contains(supported, fs.FieldPath) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fs.FieldPath, supported)}
	}
	return nil
}

// validateDownwardAPIFiles checks a downwardAPI volume's items: a path
// inside the volume, a mode, and exactly one of fieldRef and resourceFieldRef.
func validateDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, it := range items {
		p := fldPath.Index(i)
		errs = append(errs, validateFileItem(it.Path, it.Mode, p)...)
		switch {
		case it.FieldRef != nil && it.ResourceFieldRef != nil:
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		case it.FieldRef != nil:
			errs = append(errs, validateObjectFieldSelector(it.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
		case it.ResourceFieldRef == nil:
			errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
		}
	}
	return errs
}

// setVolumeSources names the sources set in src, in Kubernetes' check order.
func setVolumeSources(src *corev1.VolumeSource) []string {
	var set []string
	add := func(isSet bool, name string) {
		if isSet {
			set = append(set, name)
		}
	}
	add(src.EmptyDir != nil, "emptyDir")
	add(src.HostPath != nil, "hostPath")
	add(src.GitRepo != nil, "gitRepo")
	add(src.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(src.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(src.Secret != nil, "secret")
	add(src.NFS != nil, "nfs")
	add(src.ISCSI != nil, "iscsi")
	add(src.Glusterfs != nil, "glusterfs")
	add(src.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(src.RBD != nil, "rbd")
	add(src.FlexVolume != nil, "flexVolume")
	add(src.Cinder != nil, "cinder")
	add(src.CephFS != nil, "cephfs")
	add(src.Flocker != nil, "flocker")
	add(src.DownwardAPI != nil, "downwardAPI")
	add(src.FC != nil, "fc")
	add(src.AzureFile != nil, "azureFile")
	add(src.ConfigMap != nil, "configMap")
	add(src.VsphereVolume != nil, "vsphereVolume")
	add(src.Quobyte != nil, "quobyte")
	add(src.AzureDisk != nil, "azureDisk")
	add(src.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(src.Projected != nil, "projected")
	add(src.PortworxVolume != nil, "portworxVolume")
	add(src.ScaleIO != nil, "scaleIO")
	add(src.StorageOS != nil, "storageos")
	add(src.CSI != nil, "csi")
	add(src.Ephemeral != nil, "ephemeral")
	add(src.Image != nil, "image")
	return set
}

func validateMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		p := fldPath.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		errs = append(errs, validateFileItem(kp.Path, kp.Mode, p)...)
	}
	return errs
}

// validateFileItem checks what every file of a volume's items has: a path
// inside the volume and a valid mode.
func validateFileItem(filePath string, mode *int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if filePath == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, validateLocalDescendingPath(filePath, p.Child("path"))...)
	}
	return append(errs, validateMode(mode, p.Child("mode"))...)
}

// validateLocalDescendingPath keeps file paths inside the volume: relative,
// without "..".
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			errs = append(errs, field.Invalid(fldPath, p, "must not contain '..'"))
			break
		}
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(idxPath.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(idxPath.Child("mountPath"), ""))
		} else if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, idxPath.Child("subPath"))...)
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional:
			default:
				errs = append(errs, field.NotSupported(idxPath.Child("mountPropagation"), *m.MountPropagation, supportedMountPropagate))
			}
		}
		// Without the index, as v1.33 reports it
		// (spec.containers[0].volumeMounts.recursiveReadOnly).
		errs = append(errs, validateRecursiveReadOnly(m, fldPath.Child("recursiveReadOnly"))...)
	}
	return errs
}

// validateRecursiveReadOnly judges a mount's recursiveReadOnly as v1.33
// (RecursiveReadOnlyMounts, GA): Enabled and IfPossible only on a read-only
// mount without mount propagation, since a recursively read-only mount
// cannot pass later mounts through. Refused here, such a mount would
// otherwise be stored and fail only when the node starts the container.
func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly, supportedRecursiveReadOnly))
	}
	return errs
}

// validateSpecRecursiveReadOnly is validateRecursiveReadOnly over the
// spec's containers' mounts, with the paths validateVolumeMounts gives its
// errors.
func validateSpecRecursiveReadOnly(s *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	eachContainer(s, fldPath, func(c *corev1.Container, p *field.Path) {
		for _, m := range c.VolumeMounts {
			errs = append(errs, validateRecursiveReadOnly(m, p.Child("volumeMounts", "recursiveReadOnly"))...)
		}
	})
	return errs
}
