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

// TestPodSecurityNamespaceLabels: bad pod-security labels are refused as
// Kubernetes refuses them (422), on create and on update, and raising a
// namespace's enforce level warns about the pods already there.
func TestPodSecurityNamespaceLabels(t *testing.T) {
	cs, srv := clientset(t)
	ctx := context.Background()
	invalid := func(err error, want string) {
		t.Helper()
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v, want 422 Invalid %q", err, want)
		}
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strict"}}}, metav1.CreateOptions{})
	invalid(err, `Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bad",
		Labels: map[string]string{"pod-security.kubernetes.io/warn-version": "1.30"}}}, metav1.CreateOptions{})
	invalid(err, `Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"`)
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused namespace was stored: %v", err)
	}

	namespace(t, cs, "open", nil)
	host := testPod("host")
	host.Spec.HostNetwork = true
	if _, err := cs.CoreV1().Pods("open").Create(ctx, host, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("open").Create(ctx, testPod("plain"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = warningFunc(func(msg string) { warnings = append(warnings, msg) })
	wcs := kubernetes.NewForConfigOrDie(cfg)
	relabel := func(labels map[string]string) error {
		ns, err := wcs.CoreV1().Namespaces().Get(ctx, "open", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.Labels = labels
		_, err = wcs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		return err
	}
	err = relabel(map[string]string{"pod-security.kubernetes.io/enforce": "base"})
	invalid(err, `Namespace "open" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "base": must be one of privileged, baseline, restricted`)

	warnings = nil
	if err := relabel(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}); err != nil {
		t.Fatalf("raising the enforce level: %v", err)
	}
	want := []string{
		`existing pods in namespace "open" violate the new PodSecurity enforce level "baseline:latest"`,
		`host: host namespaces`, // the reason only, as Kubernetes words it
	}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings %q, want %q", warnings, want)
	}
	// Unchanged enforce level: nothing to say; the pods stay.
	warnings = nil
	if err := relabel(map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "team": "a"}); err != nil || len(warnings) != 0 {
		t.Fatalf("relabelling without changing enforce: err %v, warnings %q", err, warnings)
	}
	if _, err := cs.CoreV1().Pods("open").Get(ctx, "host", metav1.GetOptions{}); err != nil {
		t.Fatalf("an existing pod is left alone: %v", err)
	}
	// New pods now meet the level.
	host.Name = "host2"
	_, err = cs.CoreV1().Pods("open").Create(ctx, host, metav1.CreateOptions{})
	forbiddenWith(t, err, `violates PodSecurity "baseline:latest"`)
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

// TestPodQOSClassCountsAdmission: a new pod's status.qosClass is decided
// by its resources as admission leaves them, so LimitRange defaults count;
// a status write that leaves the class out keeps it.
func TestPodQOSClassCountsAdmission(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	plain, err := cs.CoreV1().Pods("default").Create(ctx, testPod("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("pod without resources: qosClass %q, want BestEffort", plain.Status.QOSClass)
	}
	namespace(t, cs, "limited", nil)
	both := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: both}}}}
	if _, err := cs.CoreV1().LimitRanges("limited").Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("limited").Create(ctx, testPod("defaulted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("pod given equal requests and limits by a LimitRange: qosClass %q, want Guaranteed (resources %+v)", p.Status.QOSClass, p.Spec.Containers[0].Resources)
	}
	p.Status.QOSClass = ""
	p.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods("limited").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods("limited").Get(ctx, "defaulted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.QOSClass != corev1.PodQOSGuaranteed || got.Status.Phase != corev1.PodRunning {
		t.Errorf("after a status write without the class: qosClass %q phase %s, want Guaranteed Running", got.Status.QOSClass, got.Status.Phase)
	}
}

// TestQuotaBestEffortScopeFollowsQOSClass: a quota's BestEffort scope
// selects pods by QoS class, which only CPU and memory decide; a pod that
// asks only for ephemeral storage is BestEffort.
func TestQuotaBestEffortScopeFollowsQOSClass(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	namespace(t, cs, "scoped", nil)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "best-effort"}, Spec: corev1.ResourceQuotaSpec{
		Hard:   corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")},
		Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}
	if _, err := cs.CoreV1().ResourceQuotas("scoped").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	storageOnly := func(name string) *corev1.Pod {
		p := testPod(name)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		return p
	}
	if _, err := cs.CoreV1().Pods("scoped").Create(ctx, storageOnly("first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cs.CoreV1().Pods("scoped").Create(ctx, storageOnly("second"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: best-effort") {
		t.Fatalf("second BestEffort pod over a BestEffort quota of 1 pod: %v, want Forbidden, exceeded quota", err)
	}
	burstable := testPod("burstable")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if _, err := cs.CoreV1().Pods("scoped").Create(ctx, burstable, metav1.CreateOptions{}); err != nil {
		t.Errorf("Burstable pod outside the BestEffort scope: %v", err)
	}
}

// TestQuotaRequiresComputeMessage: a quota on cpu or memory refuses pods
// whose containers leave it out with Kubernetes' message: the resources in
// name order, each with the (sorted) containers, init containers too, that
// leave it out.
func TestQuotaRequiresComputeMessage(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	namespace(t, cs, "compute", nil)
	hard := corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse("4"), corev1.ResourceRequestsMemory: resource.MustParse("4Gi"),
		corev1.ResourceCPU: resource.MustParse("4")}
	if _, err := cs.CoreV1().ResourceQuotas("compute").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := testPod("p")
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	p.Spec.Containers = []corev1.Container{
		{Name: "b", Image: "busybox"},
		{Name: "a", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: cpu, Limits: cpu}},
	}
	p.Spec.InitContainers = []corev1.Container{{Name: "c", Image: "busybox"}}
	_, err := cs.CoreV1().Pods("compute").Create(ctx, p, metav1.CreateOptions{})
	want := `pods "p" is forbidden: failed quota: compute: must specify cpu for: b,c; limits.cpu for: b,c; requests.memory for: a,b,c`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestQuotaChecksOnlyWhatARequestAdds: quota admission checks only the
// resources a request adds something to, as Kubernetes drops zero usage
// before comparing with spec.hard. A quota already past one limit (its hard
// value was lowered below what is in use) still admits objects that use
// none of that resource: a ClusterIP service under an exceeded
// services.nodeports, and a service type change that needs no more node
// ports. An object that does use it is refused.
func TestQuotaChecksOnlyWhatARequestAdds(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	namespace(t, cs, "q", nil)
	hard := corev1.ResourceList{corev1.ResourceServices: resource.MustParse("10"), corev1.ResourceServicesNodePorts: resource.MustParse("1")}
	q, err := cs.CoreV1().ResourceQuotas("q").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "svc"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two node ports in use, one allowed: the limit was lowered.
	q.Status.Hard = hard
	q.Status.Used = corev1.ResourceList{corev1.ResourceServices: resource.MustParse("1"), corev1.ResourceServicesNodePorts: resource.MustParse("2")}
	if _, err := cs.CoreV1().ResourceQuotas("q").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := func(name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Type: typ,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	}
	created, err := cs.CoreV1().Services("q").Create(ctx, svc("cluster", corev1.ServiceTypeClusterIP), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("ClusterIP service under an exceeded services.nodeports: %v", err)
	}
	_, err = cs.CoreV1().Services("q").Create(ctx, svc("nodeport", corev1.ServiceTypeNodePort), metav1.CreateOptions{})
	forbiddenWith(t, err, "exceeded quota: svc, requested: services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=1")
	// An update that adds nothing is not checked either.
	created.Labels = map[string]string{"x": "y"}
	if _, err := cs.CoreV1().Services("q").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("label change of a ClusterIP service: %v", err)
	}
	q, err = cs.CoreV1().ResourceQuotas("q").Get(ctx, "svc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := q.Status.Used[corev1.ResourceServices]; used.Value() != 2 {
		t.Fatalf("services used %s, want 2", used.String())
	}
}
