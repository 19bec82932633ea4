package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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

	// Not yet processed by the disruption controller: 429, retried after 10 s as Kubernetes asks.
	err := evict(c, "a")
	if !apierrors.IsTooManyRequests(err) || causes(err) != "The disruption budget guard is still being processed by the server." {
		t.Fatalf("unprocessed budget: %v", err)
	}
	if s, ok := apierrors.SuggestsClientDelay(err); !ok || s != 10 {
		t.Errorf("unprocessed budget: retry after %d s (%v), want 10", s, ok)
	}
	// Nor may an unready pod go on the strength of a budget not computed yet:
	// its zero desiredHealthy proves nothing.
	runningPod(t, c, "starting", false, corev1.PodRunning)
	if err := evict(c, "starting"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("unready pod under an unprocessed budget: %v, want 429", err)
	}
	setBudget(t, c, "guard", 0, 0, 0)
	if err := evict(c, "starting"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("unready pod under a budget wanting no healthy pod: %v, want 429", err)
	}
	if err := c.CoreV1().Pods("default").Delete(ctx, "starting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
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
	err = evict(c, "b")
	if !asStatus(err, &status) || status.Status().Code != http.StatusInternalServerError || status.Status().Reason != "" ||
		status.Status().Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("two budgets: %#v", err)
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

// An evicted pod is marked DisruptionTarget (EvictionByEvictionAPI) before it
// is deleted, as in Kubernetes: one bound to a node stays terminating with the
// condition; one going at once shows it to watchers first. A resourceVersion
// precondition still holds (it is moved past the condition's write), and a
// stale one fails without marking.
func TestEvictionMarksThePodDisruptionTarget(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	condition := func(p *corev1.Pod) string {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				return string(c.Status) + " " + c.Reason + " " + c.Message
			}
		}
		return ""
	}
	const want = "True EvictionByEvictionAPI Eviction API: evicting"

	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}
	created, err := c.CoreV1().Pods("default").Create(ctx, bound, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := "1"
	err = c.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}}})
	if !apierrors.IsConflict(err) {
		t.Fatalf("eviction with a stale resourceVersion: %v, want a conflict", err)
	}
	if got, _ := c.CoreV1().Pods("default").Get(ctx, "bound", metav1.GetOptions{}); condition(got) != "" {
		t.Fatalf("a refused eviction marked the pod: %s", condition(got))
	}
	err = c.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &created.ResourceVersion}}})
	if err != nil {
		t.Fatalf("eviction with the current resourceVersion: %v", err)
	}
	got, err := c.CoreV1().Pods("default").Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || condition(got) != want {
		t.Fatalf("the evicted bound pod: %v, deletionTimestamp %v, condition %q", err, got.DeletionTimestamp, condition(got))
	}

	unbound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unbound"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}
	created, err = c.CoreV1().Pods("default").Create(ctx, unbound, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=unbound", ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := evict(c, "unbound"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch event %s: %T", ev.Type, ev.Object)
		}
		seen = append(seen, string(ev.Type)+": "+condition(p))
		if ev.Type == "DELETED" {
			break
		}
	}
	if len(seen) != 2 || seen[0] != "MODIFIED: "+want || seen[1] != "DELETED: "+want {
		t.Errorf("watch of the unbound pod's eviction: %q, want the condition, then the deletion", seen)
	}
}

// TestEvictionRefusesBadInput: an Eviction naming another pod (or none),
// disagreeing dry runs in the query and the body and delete options DELETE
// would refuse are a 400/422 before anything is deleted, as Kubernetes'
// eviction REST refuses them.
func TestEvictionRefusesBadInput(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	runningPod(t, c, "a", true, corev1.PodRunning)
	post := func(body string, query ...string) error {
		r := c.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("a").SubResource("eviction").
			SetHeader("Content-Type", "application/json").Body([]byte(body))
		for i := 0; i+1 < len(query); i += 2 {
			r = r.Param(query[i], query[i+1])
		}
		return r.Do(ctx).Error()
	}
	for _, tc := range []struct {
		name, body string
		query      []string
		want       func(error) bool
		message    string
	}{
		{"no name", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"namespace":"default"}}`, nil,
			apierrors.IsBadRequest, `name in URL does not match name in Eviction object: "a" != ""`},
		{"another pod", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"b"}}`, nil,
			apierrors.IsBadRequest, `name in URL does not match name in Eviction object: "a" != "b"`},
		{"dry runs disagree", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"},"deleteOptions":{"dryRun":["All","All"]}}`,
			[]string{"dryRun", "All"}, apierrors.IsBadRequest, "Non-matching dry-run options in request and content: [All] and [All All]"},
		{"unknown dry run in the body", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"},"deleteOptions":{"dryRun":["Some"]}}`, nil,
			apierrors.IsBadRequest, `Invalid dry run value "Some"`},
		{"unknown propagation policy", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"},"deleteOptions":{"propagationPolicy":"Soon"}}`, nil,
			apierrors.IsInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := post(tc.body, tc.query...)
			if !tc.want(err) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("eviction: %v, want %s", err, tc.message)
			}
		})
	}
	if _, err := c.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod is gone after refused evictions: %v", err)
	}
	// The same dry run in both places is one dry run: the pod stays.
	if err := post(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"a"},"deleteOptions":{"dryRun":["All"]}}`, "dryRun", "All"); err != nil {
		t.Fatalf("matching dry runs: %v", err)
	}
	if p, err := c.CoreV1().Pods("default").Get(ctx, "a", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("after a dry-run eviction: %v, %v", p, err)
	}
}

// TestEvictionOfUnhealthyAndFinishedPods: as Kubernetes' eviction REST, a finished pod goes whatever
// its budget says, an unready pod goes under an unmet budget only with AlwaysAllow, and a dry run
// spends nothing and marks nothing.
func TestEvictionOfUnhealthyAndFinishedPods(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	min := intstr.FromInt32(2)
	pdb, err := c.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One healthy pod of the two wanted: nothing may be disrupted.
	setBudget(t, c, "guard", 0, 1, 2)
	runningPod(t, c, "done", false, corev1.PodSucceeded)
	runningPod(t, c, "failed", false, corev1.PodFailed)
	for _, name := range []string{"done", "failed"} {
		if err := evict(c, name); err != nil {
			t.Fatalf("finished pod %s under a spent budget: %v", name, err)
		}
	}
	runningPod(t, c, "unready", false, corev1.PodRunning)
	if err := evict(c, "unready"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("unready pod under an unmet IfHealthyBudget budget: %v, want 429", err)
	}
	pdb, _ = c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{})
	always := policyv1.AlwaysAllow
	pdb.Spec.UnhealthyPodEvictionPolicy = &always
	if _, err := c.PolicyV1().PodDisruptionBudgets("default").Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setBudget(t, c, "guard", 0, 1, 2)
	runningPod(t, c, "ready", true, corev1.PodRunning)
	if err := evict(c, "ready"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("ready pod under AlwaysAllow and a spent budget: %v, want 429", err)
	}
	dry := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "unready", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	if err := c.PolicyV1().Evictions("default").Evict(ctx, dry); err != nil {
		t.Fatalf("dry-run eviction of an unready pod under AlwaysAllow: %v", err)
	}
	if p, err := c.CoreV1().Pods("default").Get(ctx, "unready", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil || len(p.Status.Conditions) != 1 {
		t.Fatalf("after a dry run: %v, %+v", err, p)
	}
	if err := evict(c, "unready"); err != nil {
		t.Fatalf("unready pod under AlwaysAllow: %v", err)
	}
	if p, _ := c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{}); len(p.Status.DisruptedPods) != 0 {
		t.Fatalf("an unhealthy pod's eviction spent the budget: %+v", p.Status)
	}

	// A dry run under a budget that allows a disruption neither spends it nor records the pod.
	setBudget(t, c, "guard", 1, 3, 2)
	dry.Name = "ready"
	if err := c.PolicyV1().Evictions("default").Evict(ctx, dry); err != nil {
		t.Fatalf("dry-run eviction: %v", err)
	}
	if p, _ := c.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guard", metav1.GetOptions{}); p.Status.DisruptionsAllowed != 1 || len(p.Status.DisruptedPods) != 0 {
		t.Fatalf("a dry run spent the budget: %+v", p.Status)
	}
}
