package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// runningPod creates a pod and reports it Running (and Ready when ready).
func runningPod(t *testing.T, c kubernetes.Interface, name string, ready bool, phase corev1.PodPhase) {
	t.Helper()
	ctx := context.Background()
	p, err := c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "guarded"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Phase = phase
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setBudget writes a PDB status as the disruption controller would.
func setBudget(t *testing.T, c kubernetes.Interface, name string, allowed, healthy, desired int32) {
	t.Helper()
	ctx := context.Background()
	p, err := c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: p.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: healthy}
	if _, err := c.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func evict(c kubernetes.Interface, name string) error {
	return c.PolicyV1().Evictions("default").Evict(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})
}

func TestEvictionHonoursDisruptionBudget(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	runningPod(t, c, "a", true, corev1.PodRunning)
	runningPod(t, c, "b", true, corev1.PodRunning)
	min := intstr.FromInt32(1)
	if _, err := c.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Not yet processed by the disruption controller: 429.
	err := evict(c, "a")
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(causes(err), "still being processed") {
		t.Fatalf("unprocessed budget: %v", err)
	}

	setBudget(t, c, "guard", 1, 2, 1)
	if err := evict(c, "a"); err != nil {
		t.Fatalf("allowed eviction: %v", err)
	}
	if _, err := c.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod still there: %v", err)
	}
	p, _ := c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	if p.Status.DisruptionsAllowed != 0 || p.Status.DisruptedPods["a"].Time.IsZero() {
		t.Fatalf("the eviction must spend the budget: %+v", p.Status)
	}

	// The budget is spent: kubectl drain's 429 with Kubernetes' message and cause.
	err = evict(c, "b")
	var status apierrors.APIStatus
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Fatalf("spent budget: %v", err)
	}
	if ok := asStatus(err, &status); !ok || status.Status().Code != http.StatusTooManyRequests ||
		len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Type != policyv1.DisruptionBudgetCause {
		t.Fatalf("status: %+v", err)
	}

	// Pods that are not running cost nothing; an unready pod may go while the budget is met.
	runningPod(t, c, "pending", false, corev1.PodPending)
	if err := evict(c, "pending"); err != nil {
		t.Fatalf("pending pod: %v", err)
	}
	setBudget(t, c, "guard", 0, 1, 1)
	runningPod(t, c, "unready", false, corev1.PodRunning)
	if err := evict(c, "unready"); err != nil {
		t.Fatalf("unready pod with a healthy budget: %v", err)
	}

	// Two budgets over one pod: Kubernetes refuses.
	if _, err := c.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := evict(c, "b"); err == nil || !strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
		t.Fatalf("two budgets: %v", err)
	}
}

// causes joins the messages of an API error's causes.
func causes(err error) string {
	var s apierrors.APIStatus
	if !asStatus(err, &s) || s.Status().Details == nil {
		return ""
	}
	var out []string
	for _, c := range s.Status().Details.Causes {
		out = append(out, c.Message)
	}
	return strings.Join(out, "; ")
}

func asStatus(err error, out *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*out = s
	}
	return ok
}
