package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodAffinityLabelKeysMergedOnCreate: as kube-apiserver since
// MatchLabelKeysInPodAffinity (GA in 1.33), a new pod's (anti-)affinity
// terms get their matchLabelKeys as "In" and mismatchLabelKeys as "NotIn"
// requirements of their label selectors, with the pod's own label values;
// keys the pod has no label for add nothing, a term without a selector is
// left alone, and the key lists stay. An update merges nothing more.
func TestPodAffinityLabelKeysMergedOnCreate(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	p := testPod("keys")
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "blue"}
	anti := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MatchLabelKeys: []string{"pod-template-hash", "absent"}, MismatchLabelKeys: []string{"tenant"}, TopologyKey: corev1.LabelHostname}
	preferred := corev1.WeightedPodAffinityTerm{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{
		LabelSelector:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpExists}}},
		MatchLabelKeys: []string{"tenant"}, TopologyKey: corev1.LabelTopologyZone}}
	p.Spec.Affinity = &corev1.Affinity{
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{anti}},
		PodAffinity:     &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{preferred}},
	}
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantAnti := anti.DeepCopy()
	wantAnti.LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{
		{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{"abc"}},
		{Key: "tenant", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"blue"}},
	}
	if terms := got.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(terms) != 1 || !apiequality.Semantic.DeepEqual(terms[0], *wantAnti) {
		t.Errorf("anti-affinity term stored as\n%+v\nwant\n%+v", terms, *wantAnti)
	}
	wantPreferred := preferred.DeepCopy()
	wantPreferred.PodAffinityTerm.LabelSelector.MatchExpressions = append(wantPreferred.PodAffinityTerm.LabelSelector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: "tenant", Operator: metav1.LabelSelectorOpIn, Values: []string{"blue"}})
	if terms := got.Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 1 || !apiequality.Semantic.DeepEqual(terms[0], *wantPreferred) {
		t.Errorf("preferred affinity term stored as\n%+v\nwant\n%+v", terms, *wantPreferred)
	}

	// An update (a label change) leaves the stored selectors as they are.
	got.Labels["pod-template-hash"] = "def"
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(updated.Spec.Affinity, got.Spec.Affinity) {
		t.Errorf("an update changed the affinity to %+v", updated.Spec.Affinity)
	}
}

// TestPodAffinityLabelKeysValidated: the key lists are checked after the
// merge, as kube-apiserver checks them, so a matchLabelKeys key the term's
// selector already requires is refused with Kubernetes' 422 Invalid status
// (the merge would require the key twice), and so are keys without a
// selector.
func TestPodAffinityLabelKeysValidated(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	cases := []struct {
		name      string
		term      corev1.PodAffinityTerm
		wantField string
		wantMsg   string
	}{
		{name: "in-selector", term: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MatchLabelKeys: []string{"app"}, TopologyKey: corev1.LabelHostname},
			wantField: "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]",
			wantMsg: `Pod "in-selector" is invalid: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]: ` +
				`Invalid value: "app": exists in both matchLabelKeys and labelSelector`},
		{name: "no-selector", term: corev1.PodAffinityTerm{MismatchLabelKeys: []string{"app"}, TopologyKey: corev1.LabelHostname},
			wantField: "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys",
			wantMsg: `Pod "no-selector" is invalid: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys: ` +
				`Forbidden: must not be specified when labelSelector is not set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(tc.name)
			p.Labels = map[string]string{"app": "web"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{tc.term}}}
			_, err := pods.Create(ctx, p, metav1.CreateOptions{})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity || !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want a 422 Invalid", err)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("message\n%s\nwant\n%s", err, tc.wantMsg)
			}
			if d := status.Status().Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Field != tc.wantField {
				t.Errorf("causes %+v, want one for %s", d, tc.wantField)
			}
		})
	}
}
