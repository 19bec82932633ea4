package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Persistent volumes, claims and storage classes, with Kubernetes' rules
// (pkg/apis/core/validation and pkg/apis/storage/validation) for the fields
// skiff acts on; volume sources skiff cannot mount are accepted as
// Kubernetes would accept them, checked only for "exactly one".

var supportedAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
}

var supportedReclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{
	corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain,
}

var supportedVolumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(fldPath, "at least 1 access mode is required")}
	}
	var errs field.ErrorList
	seenOncePod := false
	for _, m := range modes {
		switch m {
		case corev1.ReadWriteOncePod:
			seenOncePod = true
		case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany:
		default:
			errs = append(errs, field.NotSupported(fldPath, m, supportedAccessModes))
		}
	}
	if seenOncePod && len(modes) > 1 {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateVolumeMode(m *corev1.PersistentVolumeMode, fldPath *field.Path) field.ErrorList {
	if m == nil || *m == corev1.PersistentVolumeBlock || *m == corev1.PersistentVolumeFilesystem {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *m, supportedVolumeModes)}
}

func validateStorageClassName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
			errs = append(errs, field.Invalid(fldPath, name, msg))
		}
	}
	return errs
}

// persistentVolumeSources names the sources set in a PV, as the pod volume
// check does for pods.
func persistentVolumeSources(s *corev1.PersistentVolumeSource) []string {
	var set []string
	add := func(isSet bool, name string) {
		if isSet {
			set = append(set, name)
		}
	}
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.HostPath != nil, "hostPath")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.NFS != nil, "nfs")
	add(s.RBD != nil, "rbd")
	add(s.Quobyte != nil, "quobyte")
	add(s.CephFS != nil, "cephfs")
	add(s.ISCSI != nil, "iscsi")
	add(s.Cinder != nil, "cinder")
	add(s.FC != nil, "fc")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.AzureFile != nil, "azureFile")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.Local != nil, "local")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	return set
}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	s := &pv.Spec
	specPath := field.NewPath("spec")
	errs := validateAccessModes(s.AccessModes, specPath.Child("accessModes"))

	capPath := specPath.Child("capacity")
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	for _, name := range sortedKeys(s.Capacity) {
		if name != corev1.ResourceStorage {
			errs = append(errs, field.NotSupported(capPath.Key(string(name)), name, []corev1.ResourceName{corev1.ResourceStorage}))
			continue
		}
		errs = append(errs, validateQuantity(s.Capacity[name], capPath.Key(string(name)))...)
	}

	if s.PersistentVolumeReclaimPolicy != "" {
		switch s.PersistentVolumeReclaimPolicy {
		case corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("persistentVolumeReclaimPolicy"), s.PersistentVolumeReclaimPolicy, supportedReclaimPolicies))
		}
	}
	errs = append(errs, validateStorageClassName(s.StorageClassName, specPath.Child("storageClassName"))...)
	errs = append(errs, validateVolumeMode(s.VolumeMode, specPath.Child("volumeMode"))...)

	hasAffinity := false
	if s.NodeAffinity != nil {
		ap := specPath.Child("nodeAffinity")
		if s.NodeAffinity.Required == nil {
			errs = append(errs, field.Required(ap.Child("required"), "must specify required node constraints"))
		} else {
			hasAffinity = true
			errs = append(errs, validateNodeSelector(s.NodeAffinity.Required, ap.Child("required"))...)
		}
	}

	set := persistentVolumeSources(&s.PersistentVolumeSource)
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(specPath, "must specify a volume type"))
	case 1:
	default:
		errs = append(errs, field.Forbidden(specPath.Child(set[1]), "may not specify more than 1 volume type"))
	}
	switch {
	case s.HostPath != nil:
		p := specPath.Child("hostPath", "path")
		if s.HostPath.Path == "" {
			errs = append(errs, field.Required(p, ""))
		} else {
			errs = append(errs, validateNoBacksteps(s.HostPath.Path, p)...)
		}
	case s.Local != nil:
		p := specPath.Child("local", "path")
		if s.Local.Path == "" {
			errs = append(errs, field.Required(p, ""))
		} else {
			errs = append(errs, validateNoBacksteps(s.Local.Path, p)...)
		}
		if !hasAffinity {
			errs = append(errs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if s.ClaimRef != nil && s.ClaimRef.Name == "" {
		errs = append(errs, field.Required(specPath.Child("claimRef", "name"), ""))
	}
	return errs
}

// validateNoBacksteps rejects ".." path elements, as Kubernetes does for
// hostPath and local volumes.
func validateNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

// validatePersistentVolumeUpdate: the volume source and mode are fixed once
// created, and so is a set node affinity (the data lives there).
func validatePersistentVolumeUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if !equality.Semantic.DeepEqual(newPV.Spec.PersistentVolumeSource, oldPV.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(specPath.Child("persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(newPV.Spec.VolumeMode, oldPV.Spec.VolumeMode, specPath.Child("volumeMode"))...)
	if oldPV.Spec.NodeAffinity != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(newPV.Spec.NodeAffinity, oldPV.Spec.NodeAffinity, specPath.Child("nodeAffinity"))...)
	}
	return errs
}

func validatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	return validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))
}

func validatePersistentVolumeClaimSpec(s *corev1.PersistentVolumeClaimSpec, specPath *field.Path) field.ErrorList {
	errs := validateAccessModes(s.AccessModes, specPath.Child("accessModes"))
	if s.Selector != nil {
		errs = append(errs, validateSelector(s.Selector, "persistentvolumeclaim", specPath.Child("selector"))...)
	}
	reqPath := specPath.Child("resources").Child("requests").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(reqPath, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(reqPath, q.String(), "must be greater than zero"))
	}
	for _, name := range sortedKeys(s.Resources.Limits) {
		errs = append(errs, validateQuantity(s.Resources.Limits[name], specPath.Child("resources", "limits").Key(string(name)))...)
	}
	if s.StorageClassName != nil {
		errs = append(errs, validateStorageClassName(*s.StorageClassName, specPath.Child("storageClassName"))...)
	}
	errs = append(errs, validateVolumeMode(s.VolumeMode, specPath.Child("volumeMode"))...)
	if s.VolumeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(s.VolumeName, false) {
			errs = append(errs, field.Invalid(specPath.Child("volumeName"), s.VolumeName, msg))
		}
	}
	return errs
}

// validatePersistentVolumeClaimUpdate: a claim's spec is fixed, except that
// the binder may fill in volumeName once and a bound claim's storage request
// may grow (expansion; nothing in skiff resizes yet, but the request is
// accepted as Kubernetes accepts it).
func validatePersistentVolumeClaimUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	specPath := field.NewPath("spec")
	oldSpec := oldPVC.Spec.DeepCopy()
	newSpec := newPVC.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	var errs field.ErrorList
	if newPVC.Status.Phase == corev1.ClaimBound {
		newQ := newSpec.Resources.Requests[corev1.ResourceStorage]
		oldQ := oldSpec.Resources.Requests[corev1.ResourceStorage]
		if newQ.Cmp(oldQ) < 0 {
			errs = append(errs, field.Forbidden(specPath.Child("resources", "requests", "storage"), "field can not be less than previous value"))
		}
		oldSpec.Resources.Requests = newSpec.Resources.Requests
	}
	if !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(specPath, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	return errs
}

const maxProvisionerParameterSize = 256 * (1 << 10)
const maxProvisionerParameterLen = 512

var supportedStorageClassReclaimPolicies = []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
var supportedVolumeBindingModes = []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	provPath := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(provPath, ""))
	} else {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(sc.Provisioner)) {
			errs = append(errs, field.Invalid(provPath, sc.Provisioner, msg))
		}
	}
	paramPath := field.NewPath("parameters")
	if len(sc.Parameters) > maxProvisionerParameterLen {
		errs = append(errs, field.TooLong(paramPath, "Provisioner Parameters exceeded max allowed", maxProvisionerParameterLen))
	}
	total := 0
	for k, v := range sc.Parameters {
		if k == "" {
			errs = append(errs, field.Invalid(paramPath, sc.Parameters, "field can not be empty."))
		}
		total += len(k) + len(v)
	}
	if total > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(paramPath, "", maxProvisionerParameterSize))
	}
	if sc.ReclaimPolicy != nil && *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete && *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *sc.ReclaimPolicy, supportedStorageClassReclaimPolicies))
	}
	modePath := field.NewPath("volumeBindingMode")
	switch {
	case sc.VolumeBindingMode == nil:
		errs = append(errs, field.Required(modePath, fmt.Sprintf("must be one of %s, %s", storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)))
	case *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate && *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
		errs = append(errs, field.NotSupported(modePath, *sc.VolumeBindingMode, supportedVolumeBindingModes))
	}
	return errs
}

func validateStorageClassUpdate(n, o *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(n.Parameters, o.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if n.Provisioner != o.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !equality.Semantic.DeepEqual(n.ReclaimPolicy, o.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(n.VolumeBindingMode, o.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return errs
}
