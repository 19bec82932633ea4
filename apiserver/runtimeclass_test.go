package apiserver_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runtimeClassPod is testPod asking for the RuntimeClass class.
func runtimeClassPod(name, class string) *corev1.Pod {
	p := testPod(name)
	p.Spec.RuntimeClassName = &class
	return p
}

// TestRuntimeClassAdmission: skiff serves no RuntimeClass, so a pod naming
// one names a missing class, and its create is refused as v1.33's
// RuntimeClass admission plugin refuses a pod whose class is not found (403,
// nothing stored, dry run too), after the plugins upstream runs before it
// (ServiceAccount) and before validation (an invalid name is not found
// either). It was stored and run with the default handler.
func TestRuntimeClassAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	_, err := pods.Create(ctx, runtimeClassPod("sandboxed", "gvisor"), metav1.CreateOptions{})
	forbiddenWith(t, err, `pods "sandboxed" is forbidden: pod rejected: RuntimeClass "gvisor" not found`)
	if _, err := pods.Get(ctx, "sandboxed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("refused pod: get says %v, want NotFound", err)
	}
	_, err = pods.Create(ctx, runtimeClassPod("dry", "kata"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	forbiddenWith(t, err, `pods "dry" is forbidden: pod rejected: RuntimeClass "kata" not found`)

	// Mutating admission runs before validation, as upstream: a name that
	// could never be a RuntimeClass's is not found either.
	_, err = pods.Create(ctx, runtimeClassPod("badname", "Bad_Name"), metav1.CreateOptions{})
	forbiddenWith(t, err, `pod rejected: RuntimeClass "Bad_Name" not found`)

	// ServiceAccount comes before RuntimeClass in upstream's plugin order.
	p := runtimeClassPod("noaccount", "gvisor")
	p.Spec.ServiceAccountName = "nobody"
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	forbiddenWith(t, err, `error looking up service account default/nobody`)

	// An empty name is the default class to the kubelet, but validation
	// refuses it as it refuses any name that is not a DNS subdomain.
	_, err = pods.Create(ctx, runtimeClassPod("empty", ""), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.runtimeClassName: Invalid value: \"\"") {
		t.Fatalf("empty runtimeClassName: %v, want 422 Invalid on spec.runtimeClassName", err)
	}

	if _, err := pods.Create(ctx, testPod("plain"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod naming no RuntimeClass: %v", err)
	}
}

// TestRuntimeClassAdmissionIsForPodsOnly: as upstream, the plugin looks at
// pods only; a workload's template naming a class is stored (its pods are
// refused when they are created), while a template's invalid name fails
// validation like a pod's.
func TestRuntimeClassAdmissionIsForPodsOnly(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	deployment := func(name, class string) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		tmpl := runtimeClassPod("", class)
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		}}
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("sandboxed", "gvisor"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a deployment whose template names a RuntimeClass: %v", err)
	}
	_, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("badname", "Bad_Name"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.template.spec.runtimeClassName: Invalid value: "Bad_Name"`) {
		t.Fatalf("template runtimeClassName Bad_Name: %v, want 422 Invalid on spec.template.spec.runtimeClassName", err)
	}
}

// TestPodOverheadAdmission: a pod's overhead is its RuntimeClass's; with no
// RuntimeClass to define one, a pod setting spec.overhead is refused as
// v1.33's RuntimeClass plugin refuses it (the scheduler counted it).
func TestPodOverheadAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	p := testPod("heavy")
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	forbiddenWith(t, err, `pods "heavy" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`)
}
