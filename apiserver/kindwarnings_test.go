package apiserver_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// warningsClient starts a server and returns an admin clientset for it
// that collects the Warning headers of its responses, and expect, which
// checks those collected since its last call (in order) and forgets them.
func warningsClient(t *testing.T) (*kubernetes.Clientset, func(what string, want ...string)) {
	_, srv := clientset(t)
	var warnings []string
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warningFunc(func(msg string) { warnings = append(warnings, msg) })
	expect := func(what string, want ...string) {
		t.Helper()
		if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: warnings\n %q\nwant\n %q", what, warnings, want)
		}
		warnings = nil
	}
	return kubernetes.NewForConfigOrDie(cfg), expect
}

// TestKindWarnings: writes get the kind's warnings in Warning headers, as
// kubectl shows them: on create, on updates and patches that change the
// spec (and on scale, which does), not on those that leave it alone nor on
// status writes.
func TestKindWarnings(t *testing.T) {
	cs, expect := warningsClient(t)
	ctx := context.Background()
	arch := `spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"beta.kubernetes.io/arch": "amd64"},
			Containers:   []corev1.Container{{Name: "c", Image: "i"}},
		}},
	}}
	deployments := cs.AppsV1().Deployments("default")
	d, err := deployments.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("create", arch)

	d.Labels = map[string]string{"team": "a"}
	if d, err = deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update of the labels")

	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"minReadySeconds":5}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("patch of the spec", arch)

	// A Deployment's annotations move its generation, so they warn too.
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"x"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("patch of the annotations", arch)

	if _, err := deployments.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("scale", arch)

	d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration = d.Generation
	if _, err := deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("status update")

	// Server-side apply of a new object warns as a create does; a pod's
	// name that is no DNS label is a surprising hostname.
	apply := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web.1","annotations":{"seccomp.security.alpha.kubernetes.io/pod":"runtime/default"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	if _, err := cs.CoreV1().Pods("default").Patch(ctx, "web.1", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	expect("apply creating a pod",
		`metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]`,
		`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`)
	// Pods' updates are not warned about.
	if _, err := cs.CoreV1().Pods("default").Patch(ctx, "web.1", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pod patch")
}

// TestServiceWarnings: a Service's create and updates get v1.33's Service
// warnings (GetWarningsForService) as Warning headers, on every update
// whatever it changed; its status writes get none.
func TestServiceWarnings(t *testing.T) {
	cs, expect := warningsClient(t)
	ctx := context.Background()
	services := cs.CoreV1().Services("default")
	svc, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports:                    []corev1.ServicePort{{Port: 80}},
			LoadBalancerSourceRanges: []string{"10.0.0.1/8"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hints := "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead"
	ranges := `spec.loadBalancerSourceRanges[0]: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`
	expect("create", hints, ranges)

	svc.Labels = map[string]string{"team": "a"}
	if svc, err = services.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("update of the labels", hints, ranges)

	if svc, err = services.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"externalName":"example.com"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("patch setting an externalName", hints, ranges, `spec.externalName is ignored when spec.type is not "ExternalName"`)

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if _, err := services.UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("status update")
}
