package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// GuardNode is a registry WriteGuard for nodes: the part of Kubernetes'
// NodeRestriction that authorization cannot do, because the name of a
// created Node is in the body and the rest is about what changes. A node's
// credential may create or update only the Node of its own name, and may
// not steer workloads to itself through it: it registers without labels
// reserved to administrators, and afterwards changes neither those nor
// its taints (nor sets a new configSource). Other users are not affected.
func GuardNode(ctx context.Context, obj, old runtime.Object) error {
	u, _ := authn.UserFrom(ctx)
	self, isNode := NodeName(u)
	if !isNode {
		return nil
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil
	}
	if n.Name != self {
		return forbidNode(n.Name, fmt.Errorf("node %q is not allowed to modify node %q", self, n.Name))
	}
	prev, _ := old.(*corev1.Node)
	if prev == nil {
		if n.Spec.ConfigSource != nil {
			return forbidNode(n.Name, fmt.Errorf("node %q is not allowed to register with a configSource", self))
		}
		if bad := reservedLabels(n.Labels, nil); len(bad) > 0 {
			return forbidNode(n.Name, fmt.Errorf("node %q is not allowed to set the following labels: %s", self, strings.Join(bad, ", ")))
		}
		return nil
	}
	if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, prev.Spec.ConfigSource) {
		return forbidNode(n.Name, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", self))
	}
	if !apiequality.Semantic.DeepEqual(n.Spec.Taints, prev.Spec.Taints) {
		return forbidNode(n.Name, fmt.Errorf("node %q is not allowed to modify taints", self))
	}
	if bad := reservedLabels(n.Labels, prev.Labels); len(bad) > 0 {
		return forbidNode(n.Name, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
	}
	return nil
}

func forbidNode(name string, err error) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, name, err)
}

// GuardLease is a registry WriteGuard for leases: a node's credential may
// write only its own heartbeat Lease, in LeaseNamespace and of its name, as
// Kubernetes' NodeRestriction holds it. The authorizer checks the name of
// an update; a create's is in the body, which only this sees.
func GuardLease(ctx context.Context, obj, _ runtime.Object) error {
	u, _ := authn.UserFrom(ctx)
	self, isNode := NodeName(u)
	if !isNode {
		return nil
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil
	}
	gr := schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
	if l.Namespace != LeaseNamespace {
		return apierrors.NewForbidden(gr, l.Name, fmt.Errorf("can only access leases in the %q system namespace", LeaseNamespace))
	}
	if l.Name != self {
		return apierrors.NewForbidden(gr, l.Name, fmt.Errorf("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

// kubeletLabels are the kubernetes.io labels a kubelet sets on its own
// Node (k8s.io/kubelet's IsKubeletLabel): hostname, topology, instance
// type, OS and architecture, the last two also in their beta form.
var kubeletLabels = []string{
	corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType, corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable, corev1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
}

// reservedLabels lists, sorted, the keys whose value differs between
// labels and old (added, removed or changed) that a node may not set
// itself: those under node-restriction.kubernetes.io, and those under
// kubernetes.io or k8s.io other than the kubelet's own and the
// kubelet.kubernetes.io and node.kubernetes.io namespaces.
func reservedLabels(labels, old map[string]string) []string {
	var bad []string
	check := func(k string) {
		v, now := labels[k]
		ov, before := old[k]
		if (now != before || v != ov) && ReservedLabel(k) && !slices.Contains(bad, k) {
			bad = append(bad, k)
		}
	}
	for k := range labels {
		check(k)
	}
	for k := range old {
		check(k)
	}
	sort.Strings(bad)
	return bad
}

// ReservedLabel reports whether a node may not set the label key on its
// own Node: the kubelet refuses such keys in --node-labels at start-up, and
// NodeRestriction refuses them from a node's credential.
func ReservedLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	if under(prefix, corev1.LabelNamespaceNodeRestriction) {
		return true
	}
	if !under(prefix, "kubernetes.io") && !under(prefix, "k8s.io") {
		return false
	}
	return !slices.Contains(kubeletLabels, key) &&
		!under(prefix, corev1.LabelNamespaceSuffixKubelet) && !under(prefix, corev1.LabelNamespaceSuffixNode)
}

// under reports whether a label prefix is domain or a subdomain of it.
func under(prefix, domain string) bool {
	return prefix == domain || strings.HasSuffix(prefix, "."+domain)
}
