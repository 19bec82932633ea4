package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pods here are written as the validator sees them: on create after the
// pod create hook merged matchLabelKeys ("In") and mismatchLabelKeys
// ("NotIn") into the term's selector, for the keys the pod has a label for.

const (
	antiRequired  = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	affinityPref  = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
	spreadKeys    = "spec.topologySpreadConstraints[0].matchLabelKeys"
	labelKeyHash  = "pod-template-hash"
	labelKeyGroup = "group"
)

func matchLabels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func in(key, value string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{value}}
}

func notIn(key, value string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: []string{value}}
}

func withExpressions(s *metav1.LabelSelector, reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	s.MatchExpressions = append(s.MatchExpressions, reqs...)
	return s
}

// podWithAntiAffinity is a valid pod labelled app=web, pod-template-hash=abc
// and group=g1 with one required anti-affinity term.
func podWithAntiAffinity(term corev1.PodAffinityTerm) *corev1.Pod {
	return podWith(func(p *corev1.Pod) {
		p.Labels[labelKeyHash] = "abc"
		p.Labels[labelKeyGroup] = "g1"
		term.TopologyKey = corev1.LabelHostname
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	})
}

func podWithPreferredAffinity(term corev1.PodAffinityTerm) *corev1.Pod {
	return podWith(func(p *corev1.Pod) {
		p.Labels[labelKeyHash] = "abc"
		term.TopologyKey = corev1.LabelTopologyZone
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term}}}}
	})
}

func podWithSpread(keys []string, selector *metav1.LabelSelector) *corev1.Pod {
	return podWith(func(p *corev1.Pod) {
		p.Labels[labelKeyHash] = "abc"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector, MatchLabelKeys: keys}}
	})
}

func TestPodAffinityLabelKeys(t *testing.T) {
	runCreate(t, []testCase{
		{name: "matchLabelKeys merged into the selector", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector:  withExpressions(matchLabels("app", "web"), in(labelKeyHash, "abc")),
			MatchLabelKeys: []string{labelKeyHash}})},
		{name: "key the pod has no label for, so not merged", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{"absent"}})},
		{name: "stored before the merge: keys not in the selector", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{labelKeyHash}, MismatchLabelKeys: []string{labelKeyGroup}})},
		{name: "mismatchLabelKeys key may also be in the selector", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector:     withExpressions(matchLabels("app", "web", labelKeyGroup, "g1"), notIn(labelKeyGroup, "g1")),
			MismatchLabelKeys: []string{labelKeyGroup}})},
		{name: "matchLabelKeys key also in matchLabels", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector:  withExpressions(matchLabels("app", "web"), in("app", "web")),
			MatchLabelKeys: []string{"app"}}),
			want: []want{{antiRequired + "[0]", invalid}}},
		{name: "matchLabelKeys key also in the user's expressions", obj: podWithPreferredAffinity(corev1.PodAffinityTerm{
			LabelSelector: withExpressions(&metav1.LabelSelector{},
				metav1.LabelSelectorRequirement{Key: labelKeyHash, Operator: metav1.LabelSelectorOpExists}, in(labelKeyHash, "abc")),
			MatchLabelKeys: []string{"absent", labelKeyHash}}),
			want: []want{{affinityPref + "[1]", invalid}}},
		{name: "matchLabelKeys key in the selector but not merged", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: matchLabels("absent", "x"), MatchLabelKeys: []string{"absent"}})},
		{name: "invalid key names", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{"bad key!"}, MismatchLabelKeys: []string{"ok", "/simple"}}),
			want: []want{{antiRequired + ".matchLabelKeys[0]", invalid}, {antiRequired + ".mismatchLabelKeys[1]", invalid}}},
		{name: "keys without a selector", obj: podWithAntiAffinity(corev1.PodAffinityTerm{
			MatchLabelKeys: []string{labelKeyHash, "bad key!"}, MismatchLabelKeys: []string{labelKeyGroup}}),
			want: []want{{antiRequired + ".matchLabelKeys", forbidden}, {antiRequired + ".mismatchLabelKeys", forbidden}}},
		// Merged, the key gets "In" and "NotIn": a second requirement on a
		// matchLabelKeys key as well.
		{name: "key in both lists", obj: podWithPreferredAffinity(corev1.PodAffinityTerm{
			LabelSelector:  withExpressions(matchLabels("app", "web"), in(labelKeyHash, "abc"), notIn(labelKeyHash, "abc")),
			MatchLabelKeys: []string{labelKeyHash}, MismatchLabelKeys: []string{labelKeyHash}}),
			want: []want{{affinityPref + ".matchLabelKeys[0]", invalid}, {affinityPref + "[0]", invalid}}},
	})
}

func TestTopologySpreadMatchLabelKeys(t *testing.T) {
	runCreate(t, []testCase{
		{name: "keys the selector does not name", obj: podWithSpread([]string{labelKeyHash}, matchLabels("app", "web"))},
		{name: "key also in matchLabels", obj: podWithSpread([]string{"app"}, matchLabels("app", "web")),
			want: []want{{spreadKeys + "[0]", invalid}}},
		{name: "key also in matchExpressions", obj: podWithSpread([]string{"x", labelKeyHash},
			withExpressions(matchLabels("app", "web"), metav1.LabelSelectorRequirement{Key: labelKeyHash, Operator: metav1.LabelSelectorOpExists})),
			want: []want{{spreadKeys + "[1]", invalid}}},
		{name: "invalid key name", obj: podWithSpread([]string{"bad key!"}, matchLabels("app", "web")),
			want: []want{{spreadKeys + "[0]", invalid}}},
		{name: "keys without a selector, each still checked", obj: podWithSpread([]string{labelKeyHash, "bad key!"}, nil),
			want: []want{{spreadKeys, forbidden}, {spreadKeys + "[1]", invalid}}},
	})
}

// A workload's template is checked by the same rules, unmerged: only its
// pods get the keys merged when they are created.
func TestTemplateLabelKeys(t *testing.T) {
	withTerm := func(term corev1.PodAffinityTerm) *appsv1.Deployment {
		return deploymentWith(func(d *appsv1.Deployment) {
			term.TopologyKey = corev1.LabelHostname
			d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		})
	}
	runCreate(t, []testCase{
		{name: "valid keys", obj: withTerm(corev1.PodAffinityTerm{LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{labelKeyHash}})},
		{name: "keys without a selector", obj: withTerm(corev1.PodAffinityTerm{MatchLabelKeys: []string{labelKeyHash}}),
			want: []want{{"spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys", forbidden}}},
	})
}

// The messages are Kubernetes' own, so kubectl shows the same lines.
func TestLabelKeysErrorsReadLikeKubernetes(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"key in selector", podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: withExpressions(matchLabels("app", "web"), in("app", "web")), MatchLabelKeys: []string{"app"}}),
			antiRequired + `[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`},
		{"key in both lists", podWithAntiAffinity(corev1.PodAffinityTerm{
			LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{"zz"}, MismatchLabelKeys: []string{"zz"}}),
			antiRequired + `.matchLabelKeys[0]: Invalid value: "zz": exists in both matchLabelKeys and mismatchLabelKeys`},
		{"no selector", podWithAntiAffinity(corev1.PodAffinityTerm{MismatchLabelKeys: []string{"zz"}}),
			antiRequired + `.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set`},
		{"spread key in selector", podWithSpread([]string{"app"}, matchLabels("app", "web")),
			spreadKeys + `[0]: Invalid value: "app": exists in both matchLabelKeys and labelSelector`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.pod)
			if len(errs) != 1 || errs[0].Error() != tc.want {
				t.Fatalf("got %v\nwant %s", errs, tc.want)
			}
		})
	}
}

// An update checks the stored selector again: a pod whose keys were merged
// when it was created, and one stored before the merge existed, both take a
// label change.
func TestPodLabelKeysOnUpdate(t *testing.T) {
	asStored := func(p *corev1.Pod) *corev1.Pod {
		p.UID, p.ResourceVersion, p.CreationTimestamp = "uid-1", "7", metav1.Now()
		return p
	}
	relabel := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.Labels[labelKeyHash] = "def"
		p.Labels["tier"] = "front"
		return p
	}
	merged := asStored(podWithAntiAffinity(corev1.PodAffinityTerm{
		LabelSelector:     withExpressions(matchLabels("app", "web"), in(labelKeyHash, "abc"), notIn(labelKeyGroup, "g1")),
		MatchLabelKeys:    []string{labelKeyHash},
		MismatchLabelKeys: []string{labelKeyGroup}}))
	unmerged := asStored(podWithAntiAffinity(corev1.PodAffinityTerm{
		LabelSelector: matchLabels("app", "web", labelKeyHash, "abc"), MatchLabelKeys: []string{labelKeyHash}}))
	spread := asStored(podWithSpread([]string{labelKeyHash}, matchLabels("app", "web")))
	runUpdate(t, []updateCase{
		{name: "merged at create", old: merged, new: relabel(merged)},
		{name: "stored before the merge", old: unmerged, new: relabel(unmerged)},
		{name: "topology spread keys", old: spread, new: relabel(spread)},
	})
}

// An object stored before skiff checked the key lists keeps them through
// updates (as Kubernetes lets objects stored before a rule tightened keep
// what they have); one stored with valid lists may not gain bad ones.
func TestStoredLabelKeysKept(t *testing.T) {
	asStored := func(p *corev1.Pod) *corev1.Pod {
		p.UID, p.ResourceVersion, p.CreationTimestamp = "uid-1", "7", metav1.Now()
		return p
	}
	relabel := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.Labels["tier"] = "front"
		return p
	}
	noSelector := asStored(podWithAntiAffinity(corev1.PodAffinityTerm{MatchLabelKeys: []string{labelKeyHash}}))
	mergedTwice := asStored(podWithAntiAffinity(corev1.PodAffinityTerm{
		LabelSelector: withExpressions(matchLabels("app", "web"), in("app", "web")), MatchLabelKeys: []string{"app"}}))
	badSpread := asStored(podWithSpread([]string{"app"}, matchLabels("app", "web")))

	storedDeployment := func(term corev1.PodAffinityTerm) *appsv1.Deployment {
		return stored(deploymentWith(func(d *appsv1.Deployment) {
			d.UID, d.CreationTimestamp = "uid-d", metav1.Now()
			term.TopologyKey = corev1.LabelHostname
			d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
		}))
	}
	scaled := func(d *appsv1.Deployment) *appsv1.Deployment {
		d = d.DeepCopy()
		d.Spec.Replicas = i32(5)
		return d
	}
	badTemplate := storedDeployment(corev1.PodAffinityTerm{MatchLabelKeys: []string{"bad key!"}})
	goodTemplate := storedDeployment(corev1.PodAffinityTerm{LabelSelector: matchLabels("app", "web"), MatchLabelKeys: []string{labelKeyHash}})
	madeBad := goodTemplate.DeepCopy()
	madeBad.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector = nil

	runUpdate(t, []updateCase{
		{name: "pod stored with keys but no selector", old: noSelector, new: relabel(noSelector)},
		{name: "pod stored with a key in its selector and merged", old: mergedTwice, new: relabel(mergedTwice)},
		{name: "pod stored with a spread key in its selector", old: badSpread, new: relabel(badSpread)},
		{name: "template stored with bad keys", old: badTemplate, new: scaled(badTemplate)},
		{name: "valid template may not gain bad keys", old: goodTemplate, new: madeBad,
			want: []want{{"spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys", forbidden}}},
	})
	// The status subresource of a workload runs the same checks.
	if errs := ValidateStatusUpdate(scaled(badTemplate), badTemplate); len(errs) != 0 {
		t.Errorf("status update of a template stored with bad keys: %v", errs)
	}
	// Other errors of an object stored with bad keys are still reported.
	renamed := relabel(noSelector)
	renamed.Labels["bad key!"] = "x"
	expectErrors(t, ValidateUpdate(renamed, noSelector), []want{{"metadata.labels", invalid}})
}

// TestAffinityNamespaceErrorPath: a bad name in a term's namespaces is
// reported at "namespace", as kube-apiserver reports it.
func TestAffinityNamespaceErrorPath(t *testing.T) {
	pod := podWithAntiAffinity(corev1.PodAffinityTerm{LabelSelector: matchLabels("app", "web"), Namespaces: []string{"Bad_Name"}})
	errs := Validate(pod)
	if len(errs) != 1 || errs[0].Field != antiRequired+".namespace" || errs[0].BadValue != "Bad_Name" {
		t.Fatalf("errors %v, want one at %s.namespace", errs, antiRequired)
	}
}
