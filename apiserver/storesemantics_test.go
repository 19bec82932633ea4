package apiserver_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// jobDeleteWarning is the warning Kubernetes' Job storage gives a delete
// that leaves the propagation to batch/v1's default, which orphans pods.
const jobDeleteWarning = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"

// TestDefaultPropagationPerKind: a delete that names no propagation policy
// (and finds none recorded) takes the kind's default, as Kubernetes'
// DefaultGarbageCollectionPolicy: batch/v1 Jobs and v1 ReplicationControllers
// orphan their pods (the orphan finalizer holds them for the garbage
// collector), a Job's delete warning so; apps/v1 kinds and CronJobs go in
// the background.
func TestDefaultPropagationPerKind(t *testing.T) {
	cs, expect := warningsClient(t)
	ctx := context.Background()
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	rcTemplate := template.DeepCopy()
	rcTemplate.Spec.RestartPolicy = corev1.RestartPolicyAlways
	jobs := cs.BatchV1().Jobs("default")
	rcs := cs.CoreV1().ReplicationControllers("default")
	deps := cs.AppsV1().Deployments("default")
	cjs := cs.BatchV1().CronJobs("default")
	background := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	orphan := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}

	for _, tc := range []struct {
		name     string
		create   func(name string) error
		delete   func(name string, opts metav1.DeleteOptions) error
		get      func(name string) (metav1.Object, error)
		opts     metav1.DeleteOptions
		want     string // the finalizers left, or "gone"
		warnings []string
	}{
		{name: "job-default", opts: metav1.DeleteOptions{}, want: metav1.FinalizerOrphanDependents, warnings: []string{jobDeleteWarning}},
		{name: "job-background", opts: background, want: "gone"},
		{name: "job-orphan", opts: orphan, want: metav1.FinalizerOrphanDependents},
		{name: "rc-default", opts: metav1.DeleteOptions{}, want: metav1.FinalizerOrphanDependents},
		{name: "rc-background", opts: background, want: "gone"},
		{name: "deploy-default", opts: metav1.DeleteOptions{}, want: "gone"},
		{name: "cronjob-default", opts: metav1.DeleteOptions{}, want: "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var get func() (metav1.Object, error)
			var del func() error
			switch kind, _, _ := strings.Cut(tc.name, "-"); kind {
			case "job":
				_, err = jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: batchv1.JobSpec{Template: template}}, metav1.CreateOptions{})
				get = func() (metav1.Object, error) { return jobs.Get(ctx, tc.name, metav1.GetOptions{}) }
				del = func() error { return jobs.Delete(ctx, tc.name, tc.opts) }
			case "rc":
				_, err = rcs.Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
					Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "x"}, Template: rcTemplate}}, metav1.CreateOptions{})
				get = func() (metav1.Object, error) { return rcs.Get(ctx, tc.name, metav1.GetOptions{}) }
				del = func() error { return rcs.Delete(ctx, tc.name, tc.opts) }
			case "deploy":
				_, err = deps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
					Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: *rcTemplate}}, metav1.CreateOptions{})
				get = func() (metav1.Object, error) { return deps.Get(ctx, tc.name, metav1.GetOptions{}) }
				del = func() error { return deps.Delete(ctx, tc.name, tc.opts) }
			case "cronjob":
				_, err = cjs.Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: batchv1.CronJobSpec{Schedule: "@hourly",
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}}}, metav1.CreateOptions{})
				get = func() (metav1.Object, error) { return cjs.Get(ctx, tc.name, metav1.GetOptions{}) }
				del = func() error { return cjs.Delete(ctx, tc.name, tc.opts) }
			}
			if err != nil {
				t.Fatal(err)
			}
			expect("create") // a create's own warnings are not what this is about
			if err := del(); err != nil {
				t.Fatal(err)
			}
			expect("delete", tc.warnings...)
			obj, err := get()
			got := "gone"
			if err == nil {
				got = strings.Join(obj.GetFinalizers(), ",")
				if obj.GetDeletionTimestamp() == nil {
					t.Errorf("kept without a deletionTimestamp")
				}
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("after the delete: %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDeleteDuringGracePeriod: a delete of a pod already in its grace period
// changes it only by a shorter grace period given explicitly, as
// Kubernetes' BeforeDelete: no grace period (the pod's own 30 s) or a
// longer one leaves the deadline, and a pending graceful deletion takes no
// propagation finalizer; a pod that finished meanwhile is not deleted at once
// by a delete that gives no grace period (it is its kubelet's to delete).
func TestDeleteDuringGracePeriod(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	p := testPod("long")
	p.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "long", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}); err != nil {
		t.Fatal(err)
	}
	first, err := pods.Get(ctx, "long", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) *corev1.Pod {
		t.Helper()
		got, err := pods.Get(ctx, "long", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v, want the pod still terminating", what, err)
		}
		if got.ResourceVersion != first.ResourceVersion {
			t.Errorf("%s: the pod was written: grace %v, deletionTimestamp %v, finalizers %v", what,
				ptr.Deref(got.DeletionGracePeriodSeconds, -1), got.DeletionTimestamp, got.Finalizers)
		}
		return got
	}
	for _, tc := range []struct {
		what string
		opts metav1.DeleteOptions
	}{
		{"no grace period (the pod's 30 s)", metav1.DeleteOptions{}},
		{"a longer grace period", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](120)}},
		{"the same grace period", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](60)}},
		{"orphan", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}},
		{"foreground", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}},
	} {
		if err := pods.Delete(ctx, "long", tc.opts); err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		unchanged(tc.what)
	}

	// Its containers ended: the kubelet reports Failed, then deletes it
	// with grace 0. Someone else's plain delete in between changes nothing.
	cur := unchanged("before the status")
	cur.Status.Phase = corev1.PodFailed
	cur, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first = cur
	if err := pods.Delete(ctx, "long", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	unchanged("a plain delete of the failed pod")
	if err := pods.Delete(ctx, "long", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "long", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after grace 0: %v, want NotFound", err)
	}
}

// TestDeletePreconditions: a delete whose UID or resourceVersion
// precondition fails is a 409 in Kubernetes' words (rest.BeforeDelete's),
// and leaves the object alone.
func TestDeletePreconditions(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pre  metav1.Preconditions
		want string
	}{
		{metav1.Preconditions{UID: ptr.To[types.UID]("other")},
			`Operation cannot be fulfilled on ConfigMap "pre": the UID in the precondition (other) does not match the UID in record (` + string(cm.UID) + `). The object might have been deleted and then recreated`},
		{metav1.Preconditions{ResourceVersion: ptr.To("1")},
			`Operation cannot be fulfilled on ConfigMap "pre": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (` + cm.ResourceVersion + `). The object might have been modified`},
	} {
		err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &tc.pre})
		if !apierrors.IsConflict(err) || err.Error() != tc.want {
			t.Errorf("delete with %+v:\n %v\nwant 409\n %s", tc.pre, err, tc.want)
		}
	}
	if _, err := cms.Get(ctx, "pre", metav1.GetOptions{}); err != nil {
		t.Errorf("after the refused deletes: %v", err)
	}
	// Matching preconditions delete it.
	if err := cms.Delete(ctx, "pre", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}}); err != nil {
		t.Errorf("delete with matching preconditions: %v", err)
	}
}

// TestCustomResourceUpdates: custom resources and their definitions refuse
// an update without a resourceVersion (Kubernetes' strategies for them
// disallow unconditional updates; built-in kinds allow them), and a custom
// resource without a status subresource counts any change but its
// metadata's, its status's included, as a new generation.
func TestCustomResourceUpdates(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	crdFor := func(plural, kind string, status bool) map[string]any {
		v := map[string]any{
			"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		}
		if status {
			v["subresources"] = map[string]any{"status": map[string]any{}}
		}
		return map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + ".example.com"},
			"spec": map[string]any{
				"group": "example.com", "scope": "Namespaced",
				"names":    map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{v},
			},
		}
	}
	withStatus := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "tallies"}
	plain := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "notes"}
	createCRD(t, srv, crdFor("tallies", "Tally", true), withStatus)
	createCRD(t, srv, crdFor("notes", "Note", false), plain)
	newCR := func(gvr schema.GroupVersionResource, kind, name string) *unstructured.Unstructured {
		t.Helper()
		cr, err := dyn.Resource(gvr).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": kind, "metadata": map[string]any{"name": name},
			"spec": map[string]any{"n": int64(1)},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cr
	}

	tally := newCR(withStatus, "Tally", "t")
	unconditional := tally.DeepCopy()
	unconditional.SetResourceVersion("")
	unconditional.Object["spec"] = map[string]any{"n": int64(2)}
	_, err = dyn.Resource(withStatus).Namespace("default").Update(ctx, unconditional, metav1.UpdateOptions{})
	want := `tallies.example.com "t" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("custom resource update without a resourceVersion: %v, want 422 %s", err, want)
	}
	unconditional.Object["status"] = map[string]any{"n": int64(2)}
	if _, err := dyn.Resource(withStatus).Namespace("default").UpdateStatus(ctx, unconditional, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("custom resource status update without a resourceVersion: %v, want 422", err)
	}
	if got, _ := dyn.Resource(withStatus).Namespace("default").Get(ctx, "t", metav1.GetOptions{}); got.GetResourceVersion() != tally.GetResourceVersion() {
		t.Errorf("a refused update was stored")
	}
	// A merge patch names none either, and is applied to the current object.
	if _, err := dyn.Resource(withStatus).Namespace("default").Patch(ctx, "t", types.MergePatchType, []byte(`{"spec":{"n":3}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("merge patch: %v", err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd, err := dyn.Resource(crdGVR).Get(ctx, "tallies.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.SetResourceVersion("")
	crd.SetLabels(map[string]string{"a": "b"})
	if _, err := dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("CRD update without a resourceVersion: %v, want 422", err)
	}
	// Built-in kinds take unconditional updates.
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "u"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.ResourceVersion = ""
	cm.Data = map[string]string{"k": "v"}
	if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Errorf("configmap update without a resourceVersion: %v", err)
	}

	note := newCR(plain, "Note", "n")
	notes := dyn.Resource(plain).Namespace("default")
	step := func(what string, change func(*unstructured.Unstructured), wantGen int64) {
		t.Helper()
		cur, err := notes.Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(cur)
		out, err := notes.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if out.GetGeneration() != wantGen {
			t.Errorf("%s: generation %d, want %d", what, out.GetGeneration(), wantGen)
		}
	}
	if note.GetGeneration() != 1 {
		t.Fatalf("new note: generation %d", note.GetGeneration())
	}
	step("label", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) }, 1)
	step("status without a status subresource", func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"seen": true} }, 2)
	step("spec", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"n": int64(5)} }, 3)
}

// TestCreateOnUpdate: a PUT of an object that does not exist creates it (201)
// for the kinds whose Kubernetes strategies allow create on update
// (Endpoints, Leases, LimitRanges, RBAC roles and bindings), and is a 404
// for the others; never through a subresource.
func TestCreateOnUpdate(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	put := func(resource, group, version, name string, obj any) (int, error) {
		t.Helper()
		var code int
		r := cs.CoreV1().RESTClient().Put()
		if group != "" {
			r = cs.RbacV1().RESTClient().Put()
			if group == "coordination.k8s.io" {
				r = cs.CoordinationV1().RESTClient().Put()
			}
		}
		err := r.Namespace("default").Resource(resource).Name(name).Body(obj).Do(ctx).StatusCode(&code).Error()
		return code, err
	}
	for _, tc := range []struct {
		resource, group string
		obj             any
		want            int
	}{
		{"endpoints", "", &corev1.Endpoints{TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "put-ep"}}, 201},
		{"limitranges", "", &corev1.LimitRange{TypeMeta: metav1.TypeMeta{Kind: "LimitRange", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "put-lr"}}, 201},
		{"leases", "coordination.k8s.io", &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"}, ObjectMeta: metav1.ObjectMeta{Name: "put-lease"}}, 201},
		{"roles", "rbac.authorization.k8s.io", &rbacv1.Role{TypeMeta: metav1.TypeMeta{Kind: "Role", APIVersion: "rbac.authorization.k8s.io/v1"}, ObjectMeta: metav1.ObjectMeta{Name: "put-role"}}, 201},
		{"configmaps", "", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "put-cm"}}, 404},
	} {
		code, err := put(tc.resource, tc.group, "v1", tc.obj.(metav1.Object).GetName(), tc.obj)
		if code != tc.want {
			t.Errorf("PUT of a missing %s: %d (%v), want %d", tc.resource, code, err, tc.want)
		}
	}
	if ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "put-ep", metav1.GetOptions{}); err != nil || ep.UID == "" || ep.CreationTimestamp.IsZero() {
		t.Errorf("endpoints created by a PUT: %v %+v", err, ep)
	}
	// A second PUT updates it.
	if code, err := put("endpoints", "", "v1", "put-ep", &corev1.Endpoints{TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "put-ep", Labels: map[string]string{"a": "b"}}}); code != 200 {
		t.Errorf("second PUT: %d (%v), want 200", code, err)
	}
}

// TestPodGeneration: a pod's metadata.generation starts at 1 and moves with
// each change of its spec, not with its metadata, status or binding, and
// its graceful deletion moves it once more, as Kubernetes' pod strategy
// (v1.33 sets it whatever the PodObservedGenerationTracking gate says).
func TestPodGeneration(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gen"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(step string, p *corev1.Pod, want int64) {
		t.Helper()
		if p.Generation != want {
			t.Fatalf("%s: generation %d, want %d", step, p.Generation, want)
		}
	}
	expect("create", pod, 1)
	pod, err = pods.Patch(ctx, "gen", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("label", pod, 1)
	pod, err = pods.Patch(ctx, "gen", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("image change", pod, 2)
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "gen"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err = pods.Get(ctx, "gen", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("binding", pod, 2)
	pod.Status.Phase = corev1.PodRunning
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("status", pod, 2)
	if err := pods.Delete(ctx, "gen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "gen", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("graceful deletion", pod, 3)
}

// TestPodGenerationIgnoresDefaults: an update that sends a pod's spec
// without fields the server defaults (what a client built with older API
// types drops on a read-modify-write: enableServiceLinks,
// a container's terminationMessagePolicy) changes no
// spec, so the generation stays, as in Kubernetes, where the request is
// defaulted before the pod strategy compares the specs.
func TestPodGenerationIgnoresDefaults(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gen-defaults"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels = map[string]string{"a": "b"}
	pod.Spec.EnableServiceLinks = nil
	pod.Spec.Containers[0].TerminationMessagePolicy = ""
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Errorf("after an update of a label that omits defaulted spec fields: generation %d, want 1", pod.Generation)
	}
}
