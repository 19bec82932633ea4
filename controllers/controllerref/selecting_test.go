package controllerref

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSelecting(t *testing.T) {
	rs := func(name string, sel *metav1.LabelSelector) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: sel}}
	}
	owners := []*appsv1.ReplicaSet{
		rs("match", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		rs("expression", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}),
		rs("other", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		rs("empty", &metav1.LabelSelector{}),
		rs("nil", nil),
		rs("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}),
	}
	list := func(labels.Selector) ([]*appsv1.ReplicaSet, error) { return owners, nil }
	selectorOf := func(r *appsv1.ReplicaSet) *metav1.LabelSelector { return r.Spec.Selector }

	var names []string
	for _, r := range Selecting(list, selectorOf, map[string]string{"app": "web", "tier": "front"}) {
		names = append(names, r.Name)
	}
	if want := []string{"match", "expression"}; !slices.Equal(names, want) {
		t.Fatalf("selecting owners = %v, want %v (empty, nil and invalid selectors match nothing)", names, want)
	}

	if got := Selecting(list, selectorOf, nil); len(got) != 0 {
		t.Fatalf("an unlabelled orphan is selected by %d owners, want none", len(got))
	}
	failing := func(labels.Selector) ([]*appsv1.ReplicaSet, error) { return owners, errors.New("boom") }
	if got := Selecting(failing, selectorOf, map[string]string{"app": "web"}); got != nil {
		t.Fatalf("a failing list gave %d owners, want none", len(got))
	}
}
