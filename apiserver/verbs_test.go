package apiserver_test

import (
	"context"
	"fmt"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

func clientset(t *testing.T) (*kubernetes.Clientset, *apiservertest.Running) {
	srv := apiservertest.Start(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs, srv
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// TestPodLifecycleVerbs covers what the scheduler and node agent use:
// binding, status updates, graceful deletion, eviction.
func TestPodLifecycleVerbs(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, testPod("p1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("new pod phase %q, want Pending", pod.Status.Phase)
	}
	// A Binding naming another pod than its URL is refused, as Kubernetes'
	// BindingREST, rather than applied to the URL's pod.
	err = cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("p1").SubResource("binding").
		Body(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p2"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n9"}}).Do(ctx).Error()
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "name in URL does not match name in Binding object") {
		t.Errorf("binding p2 posted to p1: %v, want BadRequest", err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	err = pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n2"}}, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("second bind: %v, want Conflict", err)
	}
	bound, _ := pods.Get(ctx, "p1", metav1.GetOptions{})
	if bound.Spec.NodeName != "n1" {
		t.Fatalf("bound to %q", bound.Spec.NodeName)
	}
	// As Kubernetes' binding, outside field management: nobody comes to
	// own spec.nodeName or the PodScheduled condition.
	if !apiequality.Semantic.DeepEqual(bound.ManagedFields, pod.ManagedFields) || len(pod.ManagedFields) == 0 {
		t.Errorf("binding changed managedFields from %+v to %+v", pod.ManagedFields, bound.ManagedFields)
	}
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("field selector spec.nodeName: %v %d", err, len(list.Items))
	}
	bound.Status.Phase = corev1.PodRunning
	bound.Spec.NodeName = "ignored"
	st, err := pods.UpdateStatus(ctx, bound, metav1.UpdateOptions{})
	if err != nil || st.Status.Phase != corev1.PodRunning || st.Spec.NodeName != "n1" {
		t.Fatalf("update status: %v phase=%v node=%v", err, st.Status.Phase, st.Spec.NodeName)
	}
	// A pod on a node is deleted gracefully; the node agent finishes with grace 0.
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := pods.Get(ctx, "p1", metav1.GetOptions{})
	if err != nil || deleting.DeletionTimestamp == nil || deleting.DeletionGracePeriodSeconds == nil || *deleting.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful delete: %v %+v", err, deleting.ObjectMeta)
	}
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after grace 0: %v, want NotFound", err)
	}
	// Eviction of an unscheduled pod deletes it.
	if _, err := pods.Create(ctx, testPod("p2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p2", Namespace: "default"}}); err != nil {
		t.Fatalf("evict: %v", err)
	}
	if _, err := pods.Get(ctx, "p2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after eviction: %v", err)
	}
}

// TestWorkloadVerbs covers scale, generateName, dry-run, finalizers,
// deletecollection and paginated lists.
func TestWorkloadVerbs(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	deps := cs.AppsV1().Deployments("default")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: testPod("").Spec},
		},
	}
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, "d", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 1 || sc.Status.Selector != "a=b" {
		t.Fatalf("get scale: %v %+v", err, sc)
	}
	if _, err := deps.Patch(ctx, "d", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("patch scale: %v", err)
	}
	got, _ := deps.Get(ctx, "d", metav1.GetOptions{})
	if *got.Spec.Replicas != 4 || got.Generation != 2 {
		t.Errorf("after scale: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}

	cms := cs.CoreV1().ConfigMaps("default")
	gen, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
	if err != nil || len(gen.Name) != len("gen-")+5 {
		t.Errorf("generateName: %v %q", err, gen.Name)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, metav1.CreateOptions{DryRun: []string{"All"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run create persisted: %v", err)
	}

	// Finalizers hold a deletion until they are removed.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "fin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := cms.Get(ctx, "fin", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("finalized object: %v %+v", err, held)
	}
	if _, err := cms.Patch(ctx, "fin", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "fin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after removing the finalizer: %v, want NotFound", err)
	}
	// Orphan propagation is recorded as the orphan finalizer.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orph"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "orph", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	if o, err := cms.Get(ctx, "orph", metav1.GetOptions{}); err != nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerOrphanDependents {
		t.Errorf("orphan delete: %v %v", err, o.Finalizers)
	}

	for i := 0; i < 7; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("page-%d", i), Labels: map[string]string{"set": "page"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{LabelSelector: "set=page", Limit: 3}
	rv := ""
	for pages := 0; ; pages++ {
		l, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if rv == "" {
			rv = l.ResourceVersion
		} else if l.ResourceVersion != rv {
			t.Errorf("page %d at resourceVersion %s, first page %s", pages, l.ResourceVersion, rv)
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(names) != 7 {
		t.Errorf("paginated list returned %v", names)
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "set=page"}); err != nil {
		t.Fatal(err)
	}
	if l, _ := cms.List(ctx, metav1.ListOptions{LabelSelector: "set=page"}); len(l.Items) != 0 {
		t.Errorf("deletecollection left %d", len(l.Items))
	}

	// A namespace terminates until its finalizers are cleared.
	nss := cs.CoreV1().Namespaces()
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Get(ctx, "gone", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace: %v %v", err, ns.Status.Phase)
	}
	if _, err := cs.CoreV1().ConfigMaps("gone").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) ||
		!apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("create in terminating namespace: %v, want Forbidden with cause %s", err, corev1.NamespaceTerminatingCause)
	}
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("finalized namespace: %v, want NotFound", err)
	}
}

// TestJobFieldSelectorStatusSuccessful: Kubernetes' field label
// status.successful selects Jobs by status.succeeded, 0 included.
func TestJobFieldSelectorStatusSuccessful(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	jobs := cs.BatchV1().Jobs("default")
	for _, name := range []string{"done", "waiting"} {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := jobs.Get(ctx, "done", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done.Status.Succeeded = 1
	if _, err := jobs.UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{"status.successful=1": "done", "status.successful=0": "waiting"} {
		list, err := jobs.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != want {
			var names []string
			for _, j := range list.Items {
				names = append(names, j.Name)
			}
			t.Errorf("%s lists %v, want [%s]", sel, names, want)
		}
	}
}

// TestJobStatusPatchFollowsJobStatusRules: a PATCH of a Job's status is
// judged by Kubernetes' Job status rules: more ready pods than active ones is
// 422 with upstream's message, and nothing of it is stored; a consistent
// status is stored.
func TestJobStatusPatchFollowsJobStatusRules(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	jobs := cs.BatchV1().Jobs("default")
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = jobs.Patch(ctx, "pi", types.MergePatchType, []byte(`{"status":{"active":1,"ready":2}}`), metav1.PatchOptions{}, "status")
	if !apierrors.IsInvalid(err) {
		t.Fatalf("status with ready 2 of 1 active: %v, want Invalid", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if want := `Job.batch "pi" is invalid: status.ready: Invalid value: 2: cannot set more ready pods than active`; st.Code != 422 || st.Message != want {
		t.Errorf("refusal %d %q, want 422 %q", st.Code, st.Message, want)
	}
	if got, _ := jobs.Get(ctx, "pi", metav1.GetOptions{}); got.Status.Active != 0 || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("the refused status was stored: active %d, resourceVersion %s (was %s)", got.Status.Active, got.ResourceVersion, created.ResourceVersion)
	}
	out, err := jobs.Patch(ctx, "pi", types.MergePatchType, []byte(`{"status":{"startTime":"2025-01-02T03:04:05Z","active":2,"ready":1}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("consistent status: %v", err)
	}
	if out.Status.Active != 2 || ptr.Deref(out.Status.Ready, 0) != 1 || out.Status.StartTime == nil {
		t.Errorf("stored status %+v, want active 2, ready 1 and the start time", out.Status)
	}
}

// TestPodStatusUpdateValidatesStatus checks that a status write is judged
// by the pod's status rules: a malformed pod IP is rejected with the field
// named, and nothing of it is stored; a good status is stored.
func TestPodStatusUpdateValidatesStatus(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, testPod("ips"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := pod.DeepCopy()
	bad.Status.PodIP, bad.Status.PodIPs = "10.42.0.300", []corev1.PodIP{{IP: "10.42.0.300"}}
	_, err = pods.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("status with pod IP 10.42.0.300: %v, want Invalid", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "status.podIPs[0].ip" {
		t.Errorf("causes %+v, want one for status.podIPs[0].ip", st.Details)
	}
	if got, _ := pods.Get(ctx, "ips", metav1.GetOptions{}); got.Status.PodIP != "" || got.ResourceVersion != pod.ResourceVersion {
		t.Errorf("the rejected status was stored: podIP %q, resourceVersion %s (was %s)", got.Status.PodIP, got.ResourceVersion, pod.ResourceVersion)
	}
	good := pod.DeepCopy()
	good.Status.PodIP, good.Status.PodIPs = "10.42.0.30", []corev1.PodIP{{IP: "10.42.0.30"}}
	if out, err := pods.UpdateStatus(ctx, good, metav1.UpdateOptions{}); err != nil || out.Status.PodIP != "10.42.0.30" {
		t.Fatalf("good status: %v (podIP %q)", err, out.Status.PodIP)
	}
}

// TestPodStatusUpdateKeepsIPsAndTheirListsTogether: as Kubernetes' v1
// conversion keeps them, status.podIP is the first of status.podIPs (and
// hostIP of hostIPs) after any status write, whichever of the two the
// writer set; where they disagree the singular field wins, as it does for
// the older kubelets that set only it.
func TestPodStatusUpdateKeepsIPsAndTheirListsTogether(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	for _, tc := range []struct {
		name       string
		podIP      string
		podIPs     []string
		hostIP     string
		hostIPs    []string
		wantPod    []string
		wantHost   []string
		wantPodIP  string
		wantHostIP string
	}{
		{name: "singular-only", podIP: "10.42.0.7", hostIP: "192.168.1.5",
			wantPodIP: "10.42.0.7", wantPod: []string{"10.42.0.7"}, wantHostIP: "192.168.1.5", wantHost: []string{"192.168.1.5"}},
		{name: "lists-only", podIPs: []string{"10.42.0.8", "fd00::8"}, hostIPs: []string{"192.168.1.6", "fd00:1::6"},
			wantPodIP: "10.42.0.8", wantPod: []string{"10.42.0.8", "fd00::8"}, wantHostIP: "192.168.1.6", wantHost: []string{"192.168.1.6", "fd00:1::6"}},
		{name: "disagreeing", podIP: "10.42.0.9", podIPs: []string{"10.42.0.10", "fd00::10"}, hostIP: "192.168.1.7", hostIPs: []string{"192.168.1.8"},
			wantPodIP: "10.42.0.9", wantPod: []string{"10.42.0.9"}, wantHostIP: "192.168.1.7", wantHost: []string{"192.168.1.7"}},
		{name: "agreeing", podIP: "10.42.0.11", podIPs: []string{"10.42.0.11", "fd00::11"}, hostIP: "192.168.1.9", hostIPs: []string{"192.168.1.9"},
			wantPodIP: "10.42.0.11", wantPod: []string{"10.42.0.11", "fd00::11"}, wantHostIP: "192.168.1.9", wantHost: []string{"192.168.1.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, err := pods.Create(ctx, testPod("ips-"+tc.name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod.Status.PodIP, pod.Status.HostIP = tc.podIP, tc.hostIP
			for _, ip := range tc.podIPs {
				pod.Status.PodIPs = append(pod.Status.PodIPs, corev1.PodIP{IP: ip})
			}
			for _, ip := range tc.hostIPs {
				pod.Status.HostIPs = append(pod.Status.HostIPs, corev1.HostIP{IP: ip})
			}
			if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var gotPod, gotHost []string
			for _, ip := range got.Status.PodIPs {
				gotPod = append(gotPod, ip.IP)
			}
			for _, ip := range got.Status.HostIPs {
				gotHost = append(gotHost, ip.IP)
			}
			if got.Status.PodIP != tc.wantPodIP || fmt.Sprint(gotPod) != fmt.Sprint(tc.wantPod) {
				t.Errorf("stored podIP %q podIPs %v, want %q %v", got.Status.PodIP, gotPod, tc.wantPodIP, tc.wantPod)
			}
			if got.Status.HostIP != tc.wantHostIP || fmt.Sprint(gotHost) != fmt.Sprint(tc.wantHost) {
				t.Errorf("stored hostIP %q hostIPs %v, want %q %v", got.Status.HostIP, gotHost, tc.wantHostIP, tc.wantHost)
			}
		})
	}
}

// TestNodeStatusUpdateDefaultsAllocatable: a node is created with the
// status it carries (as a kubelet registers it), and a status write is
// defaulted as any write is: a node whose kubelet reports only its
// capacity can allocate all of it, at creation and after.
func TestNodeStatusUpdateDefaultsAllocatable(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	nodes := cs.CoreV1().Nodes()
	capacity := func(cpu string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}
	}
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-alloc"}, Status: corev1.NodeStatus{Capacity: capacity("4")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.Allocatable.Cpu().String() != "4" {
		t.Fatalf("created node allocatable %v, want its capacity", node.Status.Allocatable)
	}
	node.Status.Capacity, node.Status.Allocatable = capacity("8"), nil
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := nodes.Get(ctx, "n-alloc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Allocatable.Cpu().String() != "8" || got.Status.Allocatable.Pods().String() != "110" {
		t.Errorf("allocatable after a status write of capacity 8 alone: %v, want the capacity", got.Status.Allocatable)
	}
}

// TestSubresourceBodyMustNameURLObject: a Scale or a finalized Namespace
// whose metadata names another object (or namespace) than the URL is a 400
// with Kubernetes' messages (the update and patch handlers' namespace check
// and checkName), and nothing is written to the URL's object.
func TestSubresourceBodyMustNameURLObject(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	deps := cs.AppsV1().Deployments("default")
	for _, name := range []string{"d", "e"} {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": name}}, Spec: testPod("").Spec},
			},
		}
		if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsBadRequest(err) || err.Error() != want {
			t.Errorf("%s: %v, want BadRequest %q", what, err, want)
		}
	}
	_, err := deps.UpdateScale(ctx, "d", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}, metav1.UpdateOptions{})
	refused("PUT d/scale naming e", err, "the name of the object (e) does not match the name on the URL (d)")
	_, err = deps.UpdateScale(ctx, "d", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "kube-system"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}, metav1.UpdateOptions{})
	refused("PUT d/scale in kube-system", err, "the namespace of the provided object does not match the namespace sent on the request")
	_, err = deps.Patch(ctx, "d", types.MergePatchType, []byte(`{"metadata":{"name":"e"},"spec":{"replicas":5}}`), metav1.PatchOptions{}, "scale")
	refused("PATCH d/scale renaming it e", err, "the name of the object (e) does not match the name on the URL (d)")
	rcs := cs.CoreV1().ReplicationControllers("default")
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc"}, Spec: corev1.ReplicationControllerSpec{
		Replicas: ptr.To[int32](1), Selector: map[string]string{"a": "rc"},
		Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "rc"}}, Spec: testPod("").Spec}}}
	if _, err := rcs.Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = rcs.UpdateScale(ctx, "rc", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}, metav1.UpdateOptions{})
	refused("PUT rc/scale naming d", err, "the name of the object (d) does not match the name on the URL (rc)")
	for _, name := range []string{"d", "e"} {
		if sc, err := deps.GetScale(ctx, name, metav1.GetOptions{}); err != nil || sc.Spec.Replicas != 1 {
			t.Errorf("deployment %s after the refused scales: %v %+v", name, err, sc)
		}
	}
	if sc, err := rcs.GetScale(ctx, "rc", metav1.GetOptions{}); err != nil || sc.Spec.Replicas != 1 {
		t.Errorf("rc after the refused scale: %v %+v", err, sc)
	}
	// The URL's own name is served.
	if sc, err := deps.UpdateScale(ctx, "d", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}}, metav1.UpdateOptions{}); err != nil || sc.Spec.Replicas != 2 {
		t.Errorf("PUT d/scale naming d: %v %+v", err, sc)
	}

	nss := cs.CoreV1().Namespaces()
	for _, name := range []string{"fin-a", "fin-b"} {
		if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = cs.CoreV1().RESTClient().Put().Resource("namespaces").Name("fin-a").SubResource("finalize").
		Body(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fin-b"}}).Do(ctx).Error()
	refused("PUT fin-a/finalize naming fin-b", err, "the name of the object (fin-b) does not match the name on the URL (fin-a)")
	for _, name := range []string{"fin-a", "fin-b"} {
		if ns, err := nss.Get(ctx, name, metav1.GetOptions{}); err != nil || len(ns.Spec.Finalizers) != 1 {
			t.Errorf("namespace %s after the refused finalize: %v %+v", name, err, ns)
		}
	}
}
