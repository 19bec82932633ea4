package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

func validateNode(n *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	for i, cidr := range n.Spec.PodCIDRs {
		errs = append(errs, validation.IsValidCIDR(specPath.Child("podCIDRs").Index(i), cidr)...)
	}
	// More than one pod CIDR is a dual-stack pair, one per family, as Kubernetes' ValidateNode (an
	// unparsable one is reported above).
	if len(n.Spec.PodCIDRs) > 1 {
		if dual, err := netutils.IsDualStackCIDRStrings(n.Spec.PodCIDRs); err == nil && (!dual || len(n.Spec.PodCIDRs) > 2) {
			errs = append(errs, field.Invalid(specPath.Child("podCIDRs"), n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	if n.Spec.PodCIDR != "" && (len(n.Spec.PodCIDRs) == 0 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR) {
		errs = append(errs, field.Invalid(specPath.Child("podCIDRs"), n.Spec.PodCIDRs, "must be empty or the first value must match spec.podCIDR"))
	}
	errs = append(errs, validateTaints(n.Spec.Taints, specPath.Child("taints"))...)
	for _, name := range sortedKeys(n.Status.Capacity) {
		errs = append(errs, validateQuantity(n.Status.Capacity[name], field.NewPath("status", "capacity").Key(string(name)))...)
	}
	for _, name := range sortedKeys(n.Status.Allocatable) {
		errs = append(errs, validateQuantity(n.Status.Allocatable[name], field.NewPath("status", "allocatable").Key(string(name)))...)
	}
	return errs
}

func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		errs = append(errs, validateLabelName(t.Key, idxPath.Child("key"))...)
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(idxPath.Child("value"), t.Value, msg))
			}
		}
		if t.Effect == "" {
			errs = append(errs, field.Required(idxPath.Child("effect"), ""))
		} else {
			errs = append(errs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		}
		key := t.Key + "/" + string(t.Effect)
		if seen[key] {
			errs = append(errs, field.Duplicate(idxPath, fmt.Sprintf("taints must be unique by key and effect pair: %s:%s", t.Key, t.Effect)))
		}
		seen[key] = true
	}
	return errs
}

// validateNodeUpdate keeps a node's pod CIDRs and provider ID once assigned:
// routes and the cloud provider's view depend on them.
func validateNodeUpdate(newN, oldN *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	if len(oldN.Spec.PodCIDRs) > 0 && !equality.Semantic.DeepEqual(newN.Spec.PodCIDRs, oldN.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if oldN.Spec.ProviderID != "" && newN.Spec.ProviderID != oldN.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		sp := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(sp, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, validation.IsValidIP(sp.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validation.IsValidIP(sp.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, p := range ss.Ports {
			pp := sp.Child("ports").Index(j)
			if len(ss.Ports) > 1 && p.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if p.Name != "" {
				errs = append(errs, dns1123Label(p.Name, pp.Child("name"))...)
			}
			for _, msg := range validation.IsValidPortNum(int(p.Port)) {
				errs = append(errs, field.Invalid(pp.Child("port"), p.Port, msg))
			}
			errs = append(errs, validateProtocol(p.Protocol, pp.Child("protocol"))...)
		}
	}
	return errs
}

func validateCoreEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	// An event about a namespaced object lives in that object's namespace.
	if e.InvolvedObject.Namespace != "" && e.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.Type != "" && e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), e.Type, fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	return errs
}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	types := []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}
	seen := map[corev1.LimitType]bool{}
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		switch item.Type {
		case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
			if seen[item.Type] {
				errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
			}
			seen[item.Type] = true
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, types))
		}
		for _, set := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for _, name := range sortedKeys(set.list) {
				kp := p.Child(set.name).Key(string(name))
				errs = append(errs, validateResourceName(string(name), kp)...)
				errs = append(errs, validateQuantity(set.list[name], kp)...)
			}
		}
		for _, name := range sortedKeys(item.Min) {
			if maxQ, ok := item.Max[name]; ok {
				if minQ := item.Min[name]; minQ.Cmp(maxQ) > 0 {
					errs = append(errs, field.Invalid(p.Child("min").Key(string(name)), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
				}
			}
		}
	}
	return errs
}

func validateResourceName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}
