package resourcequota_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/resourcequota"
)

// start runs the controller on its own informers against a fresh API
// server until the test ends or a minute passes, and returns the context
// and a client of that server.
func start(t *testing.T) (context.Context, kubernetes.Interface) {
	t.Helper()
	return startWith(t, false)
}

// startWith is start, with the metadata and discovery clients that count
// other kinds when withMetadata is set, as in skiff server.
func startWith(t *testing.T, withMetadata bool) (context.Context, kubernetes.Interface) {
	return startShared(t, withMetadata, nil)
}

// startShared is startWith whose controller takes running informers from
// shared (given the test's informer factory), when not nil.
func startShared(t *testing.T, withMetadata bool, shared func(informers.SharedInformerFactory) resourcequota.SharedInformers) (context.Context, kubernetes.Interface) {
	t.Helper()
	return startServer(t, apiservertest.Start(t), withMetadata, shared, nil)
}

// startServer runs the controller against srv; its metadata client (with
// withMetadata) sends its requests through wrap, when not nil.
func startServer(t *testing.T, srv *apiservertest.Running, withMetadata bool, shared func(informers.SharedInformerFactory) resourcequota.SharedInformers,
	wrap func(http.RoundTripper) http.RoundTripper) (context.Context, kubernetes.Interface) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	// No periodic recount within a test: only the events that should
	// recount a quota may.
	opts := resourcequota.Options{Resync: time.Hour}
	if withMetadata {
		cfg := rest.CopyConfig(srv.Config)
		if wrap != nil {
			cfg.Wrap(wrap)
		}
		opts.Metadata, opts.Discovery = metadata.NewForConfigOrDie(cfg), cs.Discovery()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	f := informers.NewSharedInformerFactory(cs, 0)
	if shared != nil {
		opts.Shared = shared(f)
	}
	core := f.Core().V1()
	c, err := resourcequota.New(cs, resourcequota.Informers{Quotas: core.ResourceQuotas(), Pods: core.Pods(), Services: core.Services(),
		ConfigMaps: core.ConfigMaps(), Secrets: core.Secrets(), Claims: core.PersistentVolumeClaims()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 1)
	return ctx, cs
}

// waitUsed waits until quota in "default" shows every amount of want used.
func waitUsed(ctx context.Context, t *testing.T, cs kubernetes.Interface, quota string, want corev1.ResourceList) {
	t.Helper()
	var q *corev1.ResourceQuota
	var err error
	for ctx.Err() == nil {
		q, err = cs.CoreV1().ResourceQuotas("default").Get(ctx, quota, metav1.GetOptions{})
		ok := err == nil
		for name, v := range want {
			if ok {
				got, found := q.Status.Used[name]
				ok = found && got.Cmp(v) == 0
			}
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if q == nil {
		t.Fatalf("quota %s: %v", quota, err)
	}
	t.Fatalf("quota %s used %v, want %v", quota, q.Status.Used, want)
}

// TestQuotaIsChargedAndFreed runs the controller against a real API server:
// the quota's status is filled, creates past it are refused, and deleting a
// pod gives its unit back.
func TestQuotaIsChargedAndFreed(t *testing.T) {
	ctx, cs := start(t)

	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceRequestsCPU: resource.MustParse("1"), "count/configmaps": resource.MustParse("5")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func(pods, cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods), corev1.ResourceRequestsCPU: resource.MustParse(cpu)}
	}
	waitUsed(ctx, t, cs, "q", used("1", "100m"))
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("second"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod("third"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("third pod: %v, want exceeded quota", err)
	}
	waitUsed(ctx, t, cs, "q", used("2", "200m"))
	if err := cs.CoreV1().Pods("default").Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", used("1", "100m"))
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("third"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("after a delete freed quota: %v", err)
	}
	// Object counts are charged on create and given back on delete.
	countIs := func(want int64) {
		t.Helper()
		for ctx.Err() == nil {
			q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := q.Status.Used["count/configmaps"]; n.Value() == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		q, _ := cs.CoreV1().ResourceQuotas("default").Get(context.Background(), "q", metav1.GetOptions{})
		cms, _ := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		t.Fatalf("count/configmaps never reached %d: used %v, %d configmaps", want, q.Status.Used, len(cms.Items))
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	countIs(1)
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	countIs(0)
}

// TestStorageQuota: claims are charged requests.storage,
// persistentvolumeclaims and the per-class
// <class>.storageclass.storage.k8s.io/ resources at admission, refused past
// them with Kubernetes' message, recounted by the controller, and a grown
// claim is charged the growth.
func TestStorageQuota(t *testing.T) {
	ctx, cs := start(t)

	yes := true
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "grow"},
		Provisioner: "example.com/grow", AllowVolumeExpansion: &yes}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := func(name, class, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		}}
	}
	claims := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := claims.Create(ctx, claim("before", "grow", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gold := corev1.ResourceName("gold.storageclass.storage.k8s.io/persistentvolumeclaims")
	goldStorage := corev1.ResourceName("gold.storageclass.storage.k8s.io/requests.storage")
	for name, hard := range map[string]corev1.ResourceList{
		"q":    {corev1.ResourceRequestsStorage: resource.MustParse("3Gi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("4")},
		"gold": {gold: resource.MustParse("1"), goldStorage: resource.MustParse("10Gi")},
	} {
		if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The controller counts the claim made before the quota.
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("1Gi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("1")})
	waitUsed(ctx, t, cs, "gold", corev1.ResourceList{gold: resource.MustParse("0"), goldStorage: resource.MustParse("0")})

	_, err := claims.Create(ctx, claim("big", "grow", "3Gi"), metav1.CreateOptions{})
	want := `persistentvolumeclaims "big" is forbidden: exceeded quota: q, requested: requests.storage=3Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("claim over quota: %v, want %s", err, want)
	}
	if _, err := claims.Create(ctx, claim("g1", "gold", "500Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = claims.Create(ctx, claim("g2", "gold", "1Mi"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: gold, requested: "+string(gold)+"=1, used: "+string(gold)+"=1, limited: "+string(gold)+"=1") {
		t.Fatalf("second gold claim: %v, want the per-class count refused", err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("1524Mi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("2")})
	waitUsed(ctx, t, cs, "gold", corev1.ResourceList{gold: resource.MustParse("1"), goldStorage: resource.MustParse("500Mi")})

	// Growing a bound claim of an expandable class is charged the growth.
	grow := func(size string) error {
		cl, err := claims.Get(ctx, "before", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cl.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		_, err = claims.Update(ctx, cl, metav1.UpdateOptions{})
		return err
	}
	cl, _ := claims.Get(ctx, "before", metav1.GetOptions{})
	cl.Status.Phase = corev1.ClaimBound
	if _, err := claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := grow("3Gi"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: q, requested: requests.storage=2Gi, used: requests.storage=1524Mi") {
		t.Fatalf("growing past quota: %v", err)
	}
	if err := grow("2Gi"); err != nil {
		t.Fatalf("growing within quota: %v", err)
	}
	q, _ := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if got := q.Status.Used[corev1.ResourceRequestsStorage]; got.Cmp(resource.MustParse("2548Mi")) != 0 {
		t.Fatalf("after growing, requests.storage used %s, want 2548Mi", got.String())
	}

	// Deleting a claim gives its storage back once it is gone.
	if err := claims.Delete(ctx, "g1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, _ = claims.Get(ctx, "g1", metav1.GetOptions{})
	if cl != nil && cl.Name != "" {
		cl.Finalizers = nil // the volume-protection controller's job
		if _, err := claims.Update(ctx, cl, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("2Gi"), corev1.ResourcePersistentVolumeClaims: resource.MustParse("1")})
	waitUsed(ctx, t, cs, "gold", corev1.ResourceList{gold: resource.MustParse("0"), goldStorage: resource.MustParse("0")})
}

// TestFinishedAndTerminatingPods: a finished pod gives back its compute
// quota but still counts in count/pods while it is stored; a pod being
// deleted gracefully holds both until it is gone (or its grace period has
// run out once more), as Kubernetes counts them.
func TestFinishedAndTerminatingPods(t *testing.T) {
	ctx, cs := start(t)
	pods := cs.CoreV1().Pods("default")
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), "count/pods": resource.MustParse("10")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	for _, name := range []string{"terminating", "finished", "gone"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if name != "gone" {
			p.Spec.NodeName = "n1" // a bound pod is deleted gracefully
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := pods.Get(ctx, "finished", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodSucceeded
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "terminating", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p, err := pods.Get(ctx, "terminating", metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("a bound pod is deleted gracefully: %v", err)
	}
	// Deleting "gone" recounts after the other two changed.
	if err := pods.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), "count/pods": resource.MustParse("2")})
}

// TestPodMovingToTheTerminatingScope: a pod given an activeDeadlineSeconds
// after its create leaves a NotTerminating quota's usage and enters a
// Terminating one's, without waiting for the periodic recount.
func TestPodMovingToTheTerminatingScope(t *testing.T) {
	ctx, cs := start(t)
	for name, scope := range map[string]corev1.ResourceQuotaScope{"long": corev1.ResourceQuotaScopeNotTerminating, "short": corev1.ResourceQuotaScopeTerminating} {
		if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")}, Scopes: []corev1.ResourceQuotaScope{scope}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "long", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	waitUsed(ctx, t, cs, "short", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	// Let the extra recount the controller makes a second after a quota
	// appears pass, so that only the update can recount now.
	time.Sleep(2 * time.Second)
	p, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := int64(600)
	p.Spec.ActiveDeadlineSeconds = &deadline
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "long", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	waitUsed(ctx, t, cs, "short", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
}

// TestServiceTypeChanges: turning a service into a NodePort or
// LoadBalancer one is charged (and refused past the quota) like creating
// one, turning it back gives its node ports back, and a load balancer that
// allocates no node ports uses only those given explicitly.
func TestServiceTypeChanges(t *testing.T) {
	ctx, cs := start(t)
	svcs := cs.CoreV1().Services("default")
	hard := corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse("2"), corev1.ResourceServicesLoadBalancers: resource.MustParse("1")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	used := func(nodePorts, lbs string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceServicesNodePorts: resource.MustParse(nodePorts), corev1.ResourceServicesLoadBalancers: resource.MustParse(lbs)}
	}
	waitUsed(ctx, t, cs, "q", used("0", "0"))
	for name, ports := range map[string]int{"a": 2, "b": 1} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}}}
		for i := 0; i < ports; i++ {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprint("p", i), Port: int32(80 + i)})
		}
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	retype := func(name string, typ corev1.ServiceType, allocate *bool) error {
		t.Helper()
		svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Type = typ
		svc.Spec.AllocateLoadBalancerNodePorts = allocate
		_, err = svcs.Update(ctx, svc, metav1.UpdateOptions{})
		return err
	}
	if err := retype("a", corev1.ServiceTypeNodePort, nil); err != nil {
		t.Fatalf("ClusterIP to NodePort within quota: %v", err)
	}
	waitUsed(ctx, t, cs, "q", used("2", "0"))
	err := retype("b", corev1.ServiceTypeNodePort, nil)
	want := `services "b" is forbidden: exceeded quota: q, requested: services.nodeports=1, used: services.nodeports=2, limited: services.nodeports=2`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("ClusterIP to NodePort past quota: %v, want %s", err, want)
	}
	// Let the one extra recount the controller makes a second after a
	// quota appears pass, so that only the update can recount it now.
	time.Sleep(2 * time.Second)
	if err := retype("a", corev1.ServiceTypeClusterIP, nil); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", used("0", "0"))
	no := false
	if err := retype("b", corev1.ServiceTypeLoadBalancer, &no); err != nil {
		t.Fatalf("ClusterIP to LoadBalancer without node ports: %v", err)
	}
	waitUsed(ctx, t, cs, "q", used("0", "1"))
	if err := retype("a", corev1.ServiceTypeLoadBalancer, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: q, requested: services.loadbalancers=1") {
		t.Fatalf("a second load balancer past quota: %v", err)
	}
}

// TestHugePagesQuota: a quota on bare hugepages-<size> counts and limits
// what pods ask for of it, like its requests.hugepages-<size> form.
func TestHugePagesQuota(t *testing.T) {
	ctx, cs := start(t)
	pod := func(name, pages string) *corev1.Pod {
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "hugepages-2Mi": resource.MustParse(pages)}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}}}
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("before", "6Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{"hugepages-2Mi": resource.MustParse("10Mi"), "requests.hugepages-2Mi": resource.MustParse("20Mi")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pages"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "pages", corev1.ResourceList{"hugepages-2Mi": resource.MustParse("6Mi"), "requests.hugepages-2Mi": resource.MustParse("6Mi")})
	_, err := cs.CoreV1().Pods("default").Create(ctx, pod("more", "6Mi"), metav1.CreateOptions{})
	want := `pods "more" is forbidden: exceeded quota: pages, requested: hugepages-2Mi=6Mi, used: hugepages-2Mi=6Mi, limited: hugepages-2Mi=10Mi`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("pod past the hugepages quota: %v, want %s", err, want)
	}
}

// TestUnknownKindLeavesTheRestCounted: a quota that also counts a kind the
// cluster does not serve (a custom resource not installed yet, a typo) still
// has everything else counted, as Kubernetes, which has no evaluator for
// such a kind, leaves it out: deleting a pod gives its unit back.
func TestUnknownKindLeavesTheRestCounted(t *testing.T) {
	ctx, cs := startWith(t, true)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), "count/widgets.example.com": resource.MustParse("3")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
	if err := cs.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Status.Hard) != 2 {
		t.Fatalf("status.hard %v, want spec.hard", q.Status.Hard)
	}
}

// TestEventsAreNotCounted: events are outside quota, as Kubernetes' quota
// ignores them (its DefaultIgnoredResources): a count/events quota refuses
// no event, and status.used leaves it out, while what else the quota names
// is counted.
func TestEventsAreNotCounted(t *testing.T) {
	ctx, cs := startWith(t, true)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), "count/events": resource.MustParse("1"),
		"count/events.events.k8s.io": resource.MustParse("1")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	for i := range 3 {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("e", i)}, Reason: "Test", Message: "m", Type: corev1.EventTypeNormal,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}}
		if _, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("event %d under a count/events quota of 1: %v", i, err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Past the second count a new quota gets, and a delete's recount.
	time.Sleep(2 * time.Second)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []corev1.ResourceName{"count/events", "count/events.events.k8s.io"} {
		if v, ok := q.Status.Used[name]; ok {
			t.Errorf("status.used lists %s=%s, want it left out", name, v.String())
		}
	}
}

// TestClusterScopedKindsAreNotCounted: a count of a cluster-scoped kind
// (count/storageclasses.storage.k8s.io) stays out of status.used, scoped
// quota or not, as Kubernetes' quota monitor discovers only namespaced
// kinds and has no evaluator for the others; the rest is counted.
func TestClusterScopedKindsAreNotCounted(t *testing.T) {
	ctx, cs := startWith(t, true)
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"},
		Provisioner: "example.com/fast"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	classes := corev1.ResourceName("count/storageclasses.storage.k8s.io")
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), classes: resource.MustParse("5")}
	for name, scopes := range map[string][]corev1.ResourceQuotaScope{"q": nil, "scoped": {corev1.ResourceQuotaScopeBestEffort}} {
		if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"q", "scoped"} {
		waitUsed(ctx, t, cs, name, corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	}
	// Past the second count a new quota gets.
	time.Sleep(2 * time.Second)
	for _, name := range []string{"q", "scoped"} {
		q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := q.Status.Used[classes]; ok {
			t.Errorf("quota %s: status.used lists %s=%s, want it left out", name, classes, v.String())
		}
	}

	// A count an older skiff wrote there (every StorageClass of the
	// cluster) is dropped at the next count, not kept for good.
	q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Used[classes] = resource.MustParse("1")
	if _, err := cs.CoreV1().ResourceQuotas("default").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admission charged the pod (1); only the controller's count gives it
	// back.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	if q, err = cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, ok := q.Status.Used[classes]; ok {
		t.Errorf("status.used lists %s=%s after a recount, want the stale count dropped", classes, v.String())
	}
}

// TestOtherKindsAreFreedOnDelete: a count/<resource>.<group> quota of a kind
// the controller has no informer for is given back when such an object is
// deleted, not only at the next periodic recount, as Kubernetes' quota
// monitors replenish it.
func TestOtherKindsAreFreedOnDelete(t *testing.T) {
	ctx, cs := startWith(t, true)
	freedOnDelete(t, ctx, cs)
}

// TestOtherKindsAreFreedThroughRunningInformers: a counted kind another loop
// of the process already watches has its deletes seen through that
// informer (no second watch of it), with the same effect.
func TestOtherKindsAreFreedThroughRunningInformers(t *testing.T) {
	var asked atomic.Int32
	ctx, cs := startShared(t, true, func(f informers.SharedInformerFactory) resourcequota.SharedInformers {
		deployments := f.Apps().V1().Deployments().Informer() // as the Deployment controller asks for it
		return existingFunc(func(obj runtime.Object) (cache.SharedIndexInformer, bool) {
			if _, ok := obj.(*appsv1.Deployment); !ok {
				return nil, false
			}
			asked.Add(1)
			return deployments, true
		})
	})
	freedOnDelete(t, ctx, cs)
	if asked.Load() == 0 {
		t.Error("the running Deployment informer was not used")
	}
}

// existingFunc is a resourcequota.SharedInformers.
type existingFunc func(obj runtime.Object) (cache.SharedIndexInformer, bool)

func (f existingFunc) Existing(obj runtime.Object) (cache.SharedIndexInformer, bool) { return f(obj) }

func freedOnDelete(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	hard := corev1.ResourceList{"count/deployments.apps": resource.MustParse("1")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")})
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
	}}
	deployments := cs.AppsV1().Deployments("default")
	if _, err := deployments.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{"count/deployments.apps": resource.MustParse("1")})
	// Let the one extra recount the controller makes a second after a
	// quota appears pass, so that only the delete can recount it now.
	time.Sleep(2 * time.Second)
	if err := deployments.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	waitUsed(waitCtx, t, cs, "q", corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")})
	dep.Name = "again"
	if _, err := deployments.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("after a delete freed quota: %v", err)
	}
}

// TestScopedQuotaCountsNoOtherKinds: a scope selects pods only, so a scoped
// quota's count of another kind stays zero, as Kubernetes' object-count
// evaluators match no scope (and admission charges such objects to no
// scoped quota).
func TestScopedQuotaCountsNoOtherKinds(t *testing.T) {
	ctx, cs := startWith(t, true)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
	}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5"), "count/deployments.apps": resource.MustParse("5")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	// Past the second count a new quota gets.
	time.Sleep(2 * time.Second)
	q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := q.Status.Used["count/deployments.apps"]; !ok || !got.IsZero() {
		t.Fatalf("count/deployments.apps used %v (present %v), want 0", got.String(), ok)
	}
}

// listsOf counts the requests of a metadata client to one cluster-wide
// resource path: what an informer of that kind lists and watches (counts
// of a namespace list a namespaced path). cut ends the answers under way,
// the watches among them.
type listsOf struct {
	path   string
	n      atomic.Int64
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []io.Closer
}

func (l *listsOf) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != l.path {
		return l.next.RoundTrip(r)
	}
	l.n.Add(1)
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		l.mu.Lock()
		l.bodies = append(l.bodies, resp.Body)
		l.mu.Unlock()
	}
	return resp, err
}

func (l *listsOf) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bodies {
		_ = b.Close()
	}
	l.bodies = nil
}

// TestWatchOfARemovedKindStops: the informer the controller starts for a
// counted custom resource stops when the resource's CRD is deleted rather
// than retry its list for as long as the process runs, and a new one starts
// when the CRD is back and the quota is counted again: a delete then gives
// its unit back at once.
func TestWatchOfARemovedKindStops(t *testing.T) {
	srv := apiservertest.Start(t)
	requests := &listsOf{path: "/apis/example.com/v1/widgets"}
	ctx, cs := startServer(t, srv, true, nil, func(next http.RoundTripper) http.RoundTripper {
		requests.next = next
		return requests
	})
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	served := func(want bool) {
		t.Helper()
		for ctx.Err() == nil {
			list, err := cs.Discovery().ServerResourcesForGroupVersion("example.com/v1")
			found := err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "widgets" })
			if found == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("widgets never served=%v", want)
	}
	defineWidgets := func() {
		t.Helper()
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.com"},
			"spec": map[string]any{
				"group": "example.com", "scope": "Namespaced",
				"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		served(true)
	}
	widget := func(name string) {
		t.Helper()
		if _, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// waitRequests waits until the informer has sent more than n requests.
	waitRequests := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for requests.n.Load() <= n {
			if time.Now().After(deadline) {
				t.Fatalf("no informer of widgets: %d requests", requests.n.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	defineWidgets()
	widget("a")
	hard := corev1.ResourceList{"count/widgets.example.com": resource.MustParse("5")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{"count/widgets.example.com": resource.MustParse("1")})
	waitRequests(0)

	if err := crds.Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	served(false)
	// Kubernetes ends the watches of a deleted CRD's resource; skiff's
	// server leaves them to time out (minutes later). End the informer's
	// watch here as either would: it then lists the removed resource.
	requests.cut()
	// An informer retrying its list backs off from under a second to
	// 30s, doubling with jitter: a quiet spell of 3s comes at the latest
	// between its third and fourth attempts, the fourth less than 3.5s
	// later. A stopped informer stays quiet.
	for quiet := time.Now(); time.Since(quiet) < 3*time.Second; {
		n := requests.n.Load()
		time.Sleep(100 * time.Millisecond)
		if requests.n.Load() != n {
			quiet = time.Now()
		}
		if ctx.Err() != nil {
			t.Fatal("the informer of widgets never went quiet")
		}
	}
	stopped := requests.n.Load()
	time.Sleep(6 * time.Second)
	if n := requests.n.Load(); n != stopped {
		t.Fatalf("the informer of the removed widgets kept listing: %d requests more", n-stopped)
	}

	// Back again: a recount (here, of a changed quota) starts a new
	// informer, whose deletes free quota at once.
	defineWidgets()
	q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["count/widgets.example.com"] = resource.MustParse("6")
	if _, err := cs.CoreV1().ResourceQuotas("default").Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{"count/widgets.example.com": resource.MustParse("0")}) // "a" went with its CRD
	waitRequests(stopped)
	widget("b")
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{"count/widgets.example.com": resource.MustParse("1")})
	// Past the second count a changed quota gets, so that only the
	// delete can recount it now.
	time.Sleep(2 * time.Second)
	if err := widgets.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	waitUsed(waitCtx, t, cs, "q", corev1.ResourceList{"count/widgets.example.com": resource.MustParse("0")})
}

// TestTerminatingPodReleasedWhenItsGraceIsShortened: a pod being deleted
// whose grace period is shortened holds its quota only until the new end
// of its grace: given back at once when that end is past already (a second
// deletion with no grace left, the pod kept by a finalizer), as Kubernetes'
// pod update filter recounts on such an update (QuotaV1Pod held before and
// not after); otherwise when the new end comes, as for a first deletion,
// not at the first deletion's end nor at the periodic recount (where
// Kubernetes, whose filter saw the pod still holding quota, leaves it).
func TestTerminatingPodReleasedWhenItsGraceIsShortened(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace int64
	}{{"to none", 0}, {"to two seconds", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cs := start(t)
			if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods := cs.CoreV1().Pods("default")
			// Bound, so deleted gracefully; its finalizer keeps it stored.
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"example.com/hold"}},
				Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")})
			// Let the extra recount the controller makes a second after a
			// quota appears pass.
			time.Sleep(2 * time.Second)
			long, short := int64(30), tc.grace
			if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &long}); err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &short}); err != nil {
				t.Fatal(err)
			}
			got, err := pods.Get(ctx, "p", metav1.GetOptions{})
			if err != nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != short {
				t.Fatalf("pod after the second deletion: %v, %v", got, err)
			}
			// Well before the first deletion's end (60 s away).
			wait, cancel := context.WithTimeout(ctx, time.Duration(2*short+5)*time.Second)
			defer cancel()
			waitUsed(wait, t, cs, "q", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
			got.Finalizers = nil
			if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		})
	}
}

// TestClaimAllocatedPastItsRequest: a claim whose status.allocatedResources
// grows past its request (an expansion under way, or one that failed and was
// asked back down) is counted at the allocated size when its status changes,
// as Kubernetes' claim update filter (RequiresQuotaReplenish: the allocated
// storage changed) recounts; and again when the allocated size comes down.
func TestClaimAllocatedPastItsRequest(t *testing.T) {
	ctx, cs := start(t)
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("10Gi")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(ctx, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("1Gi")})
	// Let the extra recount the controller makes a second after a quota
	// appears pass, so that only the status update can recount now.
	time.Sleep(2 * time.Second)
	allocate := func(size string) {
		t.Helper()
		cl, err := claims.Get(ctx, "c", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cl.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
		if _, err := claims.UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	allocate("3Gi")
	waitUsed(wait, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("3Gi")})
	allocate("2Gi")
	waitUsed(wait, t, cs, "q", corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("2Gi")})
}
