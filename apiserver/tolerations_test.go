package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDefaultTolerationSeconds: a new pod tolerates a not-ready or
// unreachable node for 300 s, as on Kubernetes, unless it already says how
// long (or tolerates every NoExecute taint); an update adds nothing.
func TestDefaultTolerationSeconds(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")

	tolerationFor := func(p *corev1.Pod, key string) []corev1.Toleration {
		var out []corev1.Toleration
		for _, tol := range p.Spec.Tolerations {
			if tol.Key == key {
				out = append(out, tol)
			}
		}
		return out
	}

	plain, err := pods.Create(ctx, testPod("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		got := tolerationFor(plain, key)
		if len(got) != 1 || got[0].Operator != corev1.TolerationOpExists || got[0].Effect != corev1.TaintEffectNoExecute ||
			got[0].TolerationSeconds == nil || *got[0].TolerationSeconds != 300 {
			t.Fatalf("plain pod's %s tolerations = %+v, want one Exists/NoExecute for 300s", key, got)
		}
	}

	own := testPod("own")
	ten := int64(10)
	own.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &ten}}
	got, err := pods.Create(ctx, own, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := tolerationFor(got, corev1.TaintNodeUnreachable); len(u) != 1 || *u[0].TolerationSeconds != 10 {
		t.Fatalf("the pod's own unreachable toleration was changed: %+v", u)
	}
	if n := tolerationFor(got, corev1.TaintNodeNotReady); len(n) != 1 || *n[0].TolerationSeconds != 300 {
		t.Fatalf("not-ready toleration = %+v, want the 300s default", n)
	}

	all := testPod("all")
	all.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	got, err = pods.Create(ctx, all, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Tolerations) != 1 {
		t.Fatalf("a pod tolerating everything got %+v, want its one toleration only", got.Spec.Tolerations)
	}

	got.Labels = map[string]string{"touched": "yes"}
	updated, err := pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.Tolerations) != 1 {
		t.Fatalf("an update added tolerations: %+v", updated.Spec.Tolerations)
	}
}
