package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxConfigSize is the most data a ConfigMap or Secret may hold (1 MiB), so
// that one object cannot exhaust the store or a node's memory.
const MaxConfigSize = 1 * 1024 * 1024

const immutableDetail = "field is immutable when `immutable` is set"

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	total := 0
	dataPath := field.NewPath("data")
	binPath := field.NewPath("binaryData")
	for _, key := range sortedKeys(cm.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(binPath.Key(key), key, msg))
		}
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(binPath.Key(key), key, "duplicate of key present in data"))
		}
		total += len(cm.BinaryData[key])
	}
	if total > MaxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxConfigSize))
	}
	return errs
}

func validateConfigMapUpdate(newCM, oldCM *corev1.ConfigMap) field.ErrorList {
	if oldCM.Immutable == nil || !*oldCM.Immutable {
		return nil
	}
	var errs field.ErrorList
	if newCM.Immutable == nil || !*newCM.Immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableDetail))
	}
	if !equality.Semantic.DeepEqual(newCM.Data, oldCM.Data) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableDetail))
	}
	if !equality.Semantic.DeepEqual(newCM.BinaryData, oldCM.BinaryData) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableDetail))
	}
	return errs
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(s.Data[key])
	}
	// stringData is write-only and folded into data on write; count it too in
	// case the caller validates before folding.
	for _, key := range sortedKeys(s.StringData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("stringData").Key(key), key, msg))
		}
		if _, dup := s.Data[key]; !dup {
			total += len(s.StringData[key])
		}
	}
	if total > MaxConfigSize {
		errs = append(errs, field.TooLong(dataPath, "", MaxConfigSize))
	}

	has := func(key string) bool {
		if _, ok := s.Data[key]; ok {
			return true
		}
		_, ok := s.StringData[key]
		return ok
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeOpaque, "":
	case corev1.SecretTypeDockercfg:
		if !has(corev1.DockerConfigKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.DockerConfigKey), ""))
		}
	case corev1.SecretTypeDockerConfigJson:
		if !has(corev1.DockerConfigJsonKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.DockerConfigJsonKey), ""))
		}
	case corev1.SecretTypeBasicAuth:
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if !has(corev1.SSHAuthPrivateKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if !has(corev1.TLSCertKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if !has(corev1.TLSPrivateKeyKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	default:
		// Any other type is user-defined and must be a qualified name.
		for _, msg := range validation.IsQualifiedName(string(s.Type)) {
			errs = append(errs, field.Invalid(field.NewPath("type"), s.Type, msg))
		}
	}
	return errs
}

func validateSecretUpdate(newS, oldS *corev1.Secret) field.ErrorList {
	errs := apivalidation.ValidateImmutableField(newS.Type, oldS.Type, field.NewPath("type"))
	if oldS.Immutable == nil || !*oldS.Immutable {
		return errs
	}
	if newS.Immutable == nil || !*newS.Immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableDetail))
	}
	if !equality.Semantic.DeepEqual(newS.Data, oldS.Data) || len(newS.StringData) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableDetail))
	}
	return errs
}
