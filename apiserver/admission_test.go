package apiserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func forbiddenWith(t *testing.T, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want 403 Forbidden containing %q", err, want)
	}
}

func namespace(t *testing.T, cs kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestLimitRangeAdmission: defaults fill what containers leave out, and
// bounds refuse what is outside them with Kubernetes' LimitRanger message.
func TestLimitRangeAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}
	if _, err := cs.CoreV1().LimitRanges("default").Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("default").Create(ctx, testPod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Spec.Containers[0].Resources
	if r.Limits.Cpu().String() != "500m" || r.Requests.Cpu().String() != "100m" {
		t.Fatalf("container resources not defaulted from the LimitRange: %+v", r)
	}
	big := testPod("big")
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	_, err = cs.CoreV1().Pods("default").Create(ctx, big, metav1.CreateOptions{})
	forbiddenWith(t, err, `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`)
}

// TestPriorityAdmission: priority comes from the class; unknown classes and
// contradicting values are refused.
func TestPriorityAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	p := testPod("critical")
	p.Spec.PriorityClassName = "system-cluster-critical"
	got, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 2000000000 || got.Spec.PreemptionPolicy == nil {
		t.Fatalf("priority %v, preemption %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	plain, err := cs.CoreV1().Pods("default").Create(ctx, testPod("plain"), metav1.CreateOptions{})
	if err != nil || plain.Spec.Priority == nil || *plain.Spec.Priority != 0 || plain.Spec.ServiceAccountName != "default" {
		t.Fatalf("plain pod: %v %+v", err, plain.Spec)
	}
	p = testPod("unknown")
	p.Spec.PriorityClassName = "gold"
	_, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	forbiddenWith(t, err, "no PriorityClass with name gold was found")

	p = testPod("nosa")
	p.Spec.ServiceAccountName = "robot"
	_, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	forbiddenWith(t, err, `error looking up service account default/robot: serviceaccount "robot" not found`)
}

// TestDefaultTolerationSeconds: a pod gets Kubernetes' 300 s not-ready and
// unreachable tolerations unless it tolerates those taints itself.
func TestDefaultTolerationSeconds(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	got, err := cs.CoreV1().Pods("default").Create(ctx, testPod("tolerant"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true}
	for _, tol := range got.Spec.Tolerations {
		if want[tol.Key] && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoExecute &&
			tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 {
			delete(want, tol.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("tolerations %+v lack the defaults for %v", got.Spec.Tolerations, want)
	}
	own := testPod("own")
	own.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	got, err = cs.CoreV1().Pods("default").Create(ctx, own, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Spec.Tolerations); n != 2 || got.Spec.Tolerations[0].TolerationSeconds != nil {
		t.Errorf("a pod tolerating not-ready forever got tolerations %+v, want its own plus unreachable's default", got.Spec.Tolerations)
	}
}

// TestPodSecurityAdmission: the namespace's enforce level refuses, its
// warn level warns, and workloads are only warned about.
func TestPodSecurityAdmission(t *testing.T) {
	cs, srv := clientset(t)
	ctx := context.Background()
	namespace(t, cs, "locked", map[string]string{
		"pod-security.kubernetes.io/enforce": "baseline",
		"pod-security.kubernetes.io/warn":    "restricted",
	})
	host := testPod("host")
	host.Spec.HostNetwork = true
	_, err := cs.CoreV1().Pods("locked").Create(ctx, host, metav1.CreateOptions{})
	forbiddenWith(t, err, `pods "host" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`)

	var warnings []string
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warningFunc(func(msg string) { warnings = append(warnings, msg) })
	wcs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := wcs.CoreV1().Pods("locked").Create(ctx, testPod("loose"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `would violate PodSecurity "restricted:latest"`) {
		t.Fatalf("warnings %q", warnings)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, host, metav1.CreateOptions{}); err != nil {
		t.Fatalf("an unlabelled namespace is privileged: %v", err)
	}
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(_ int, _ string, msg string) { f(msg) }

// TestResourceQuotaAdmission: creates past a quota fail with Kubernetes'
// message, and two clients racing for the last unit cannot both win.
func TestResourceQuotaAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	namespace(t, cs, "q", nil)
	quota := func(name string, hard corev1.ResourceList) {
		q, err := cs.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What the quota controller would do first.
		q.Status.Hard, q.Status.Used = hard, corev1.ResourceList{}
		for n := range hard {
			q.Status.Used[n] = resource.MustParse("0")
		}
		if _, err := cs.CoreV1().ResourceQuotas("q").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	quota("pods", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")})
	if _, err := cs.CoreV1().Pods("q").Create(ctx, testPod("p1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two racers for the remaining two units, three times over: exactly
	// two pods land.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var created, refused int
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cs.CoreV1().Pods("q").Create(ctx, testPod("r"+string(rune('a'+i))), metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3"):
				refused++
			default:
				t.Errorf("racing create: %v", err)
			}
		}()
	}
	wg.Wait()
	if created != 2 || refused != 4 {
		t.Fatalf("%d created and %d refused; want 2 and 4", created, refused)
	}
	q, err := cs.CoreV1().ResourceQuotas("q").Get(ctx, "pods", metav1.GetOptions{})
	if err != nil || q.Status.Used.Pods().Value() != 3 {
		t.Fatalf("quota used %v (%v)", q.Status.Used, err)
	}
	// A compute quota makes limits mandatory.
	quota("compute", corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("1")})
	_, err = cs.CoreV1().Pods("q").Create(ctx, testPod("nolimits"), metav1.CreateOptions{})
	forbiddenWith(t, err, "failed quota: compute: must specify limits.cpu for: c")
}

// TestSystemNamespacesCannotBeDeleted, as NamespaceLifecycle guarantees.
func TestSystemNamespacesCannotBeDeleted(t *testing.T) {
	cs, _ := clientset(t)
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		forbiddenWith(t, err, `namespaces "`+name+`" is forbidden: this namespace may not be deleted`)
	}
	if _, err := cs.CoreV1().Pods("nowhere").Create(context.Background(), testPod("p"), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: %v, want NotFound", err)
	}
}
