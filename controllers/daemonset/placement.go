package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/skiffkube/skiff/controllers/controllerref"
)

// Taint keys of Kubernetes' default daemon tolerations.
const (
	taintNotReady           = "node.kubernetes.io/not-ready"
	taintUnreachable        = "node.kubernetes.io/unreachable"
	taintDiskPressure       = "node.kubernetes.io/disk-pressure"
	taintMemoryPressure     = "node.kubernetes.io/memory-pressure"
	taintPIDPressure        = "node.kubernetes.io/pid-pressure"
	taintUnschedulable      = "node.kubernetes.io/unschedulable"
	taintNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// addDaemonTolerations adds the tolerations every daemon pod gets. Every template toleration of
// the same key, operator, value and effect is replaced by the default one, so a tolerationSeconds
// on any of them cannot get daemon pods evicted from not-ready or unreachable nodes (the taint
// manager goes by the shortest). Kubernetes (AddOrUpdateTolerationInPodSpec) does so only when
// none of them already equals the default; when one does, it leaves them all as they are, so a
// copy with tolerationSeconds beside the default one still evicts. Skiff replaces them all in
// that case too, a deliberate difference: it never evicts sooner than Kubernetes.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		want := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		found := false
		for i := range spec.Tolerations {
			if want.MatchToleration(&spec.Tolerations[i]) {
				spec.Tolerations[i] = want
				found = true
			}
		}
		if !found {
			spec.Tolerations = append(spec.Tolerations, want)
		}
	}
	add(taintNotReady, corev1.TaintEffectNoExecute)
	add(taintUnreachable, corev1.TaintEffectNoExecute)
	add(taintDiskPressure, corev1.TaintEffectNoSchedule)
	add(taintMemoryPressure, corev1.TaintEffectNoSchedule)
	add(taintPIDPressure, corev1.TaintEffectNoSchedule)
	add(taintUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add(taintNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// placement says whether a DaemonSet's pod belongs on a node: shouldRun (create one if missing) and
// shouldContinueRunning (keep an existing one; a NoSchedule taint added later does not evict).
func placement(ds *appsv1.DaemonSet, node *corev1.Node) (shouldRun, shouldContinueRunning bool) {
	// A template that names a node confines the DaemonSet to it, as in Kubernetes.
	if n := ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	pod := &corev1.Pod{Spec: *ds.Spec.Template.Spec.DeepCopy()}
	addDaemonTolerations(&pod.Spec)
	if match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !match {
		return false, false
	}
	_, untoleratedNoExecute := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false)
	if untoleratedNoExecute {
		return false, false
	}
	_, untoleratedNoSchedule := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }, false)
	return !untoleratedNoSchedule, true
}

// podFor builds the daemon pod for a node: the template, the revision hash label, the daemon
// tolerations, and a required node affinity naming the node (replacing any other required terms,
// which placement has already checked), so the scheduler binds it there.
func podFor(ds *appsv1.DaemonSet, nodeName, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	// The template generation the API server keeps in an annotation, as the
	// pod-template-generation label Kubernetes' controller still writes.
	if gen, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		labels[templateGenerationLabel] = gen
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{controllerref.New(ds, controllerKind)},
		},
		Spec: t.Spec,
	}
	addDaemonTolerations(&pod.Spec)
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
		}}}},
	}
	return pod
}

// targetNode is the node a daemon pod is on, or is meant for while not yet scheduled.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// templateGenerationLabel is extensions/v1beta1's DaemonSetTemplateGenerationKey.
const templateGenerationLabel = "pod-template-generation"
