package registry

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func deployment(replicas int32, statusReplicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "n", Generation: 3},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status:     appsv1.DeploymentStatus{Replicas: statusReplicas},
	}
}

func TestStrategyStatusSplitAndGeneration(t *testing.T) {
	s := &DefaultStrategy{Namespaced: true, HasStatus: true, Generation: true}
	cases := []struct {
		name           string
		strategy       Strategy
		old, new       *appsv1.Deployment
		wantGen        int64
		wantReplicas   int32
		wantStatusRepl int32
	}{
		{"spec change bumps generation, status ignored", s, deployment(1, 1), deployment(2, 9), 4, 2, 1},
		{"metadata-only change keeps generation", s, deployment(1, 1), func() *appsv1.Deployment { d := deployment(1, 1); d.Labels = map[string]string{"a": "b"}; return d }(), 3, 1, 1},
		{"status endpoint changes only status", s.StatusStrategy(), deployment(1, 1), deployment(7, 5), 3, 1, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.strategy.PrepareForUpdate(tc.new, tc.old)
			if tc.new.Generation != tc.wantGen || *tc.new.Spec.Replicas != tc.wantReplicas || tc.new.Status.Replicas != tc.wantStatusRepl {
				t.Errorf("generation %d replicas %d status %d; want %d %d %d", tc.new.Generation, *tc.new.Spec.Replicas, tc.new.Status.Replicas, tc.wantGen, tc.wantReplicas, tc.wantStatusRepl)
			}
		})
	}
	created := deployment(1, 4)
	s.PrepareForCreate(created)
	if created.Generation != 1 || created.Status.Replicas != 0 {
		t.Errorf("create: generation %d status %d, want 1 and cleared status", created.Generation, created.Status.Replicas)
	}
}

func TestStrategyUnstructured(t *testing.T) {
	s := &DefaultStrategy{Namespaced: true, HasStatus: true, Generation: true}
	mk := func(size int64, phase string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "W",
			"metadata": map[string]any{"name": "w", "namespace": "n", "generation": int64(2)},
			"spec":     map[string]any{"size": size}, "status": map[string]any{"phase": phase},
		}}
	}
	n := mk(2, "changed")
	s.PrepareForUpdate(n, mk(1, "old"))
	if n.GetGeneration() != 3 || n.Object["status"].(map[string]any)["phase"] != "old" {
		t.Errorf("main endpoint: generation %d status %v", n.GetGeneration(), n.Object["status"])
	}
	n = mk(9, "new")
	s.StatusStrategy().PrepareForUpdate(n, mk(1, "old"))
	if n.Object["spec"].(map[string]any)["size"] != int64(1) || n.Object["status"].(map[string]any)["phase"] != "new" {
		t.Errorf("status endpoint: %v", n.Object)
	}
}

func TestValidateMetaAndHooks(t *testing.T) {
	calls := 0
	s := &DefaultStrategy{Namespaced: true, Hooks: Hooks{Default: func(runtime.Object) { calls++ }}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "n", Labels: map[string]string{"-bad": "x"}}}
	s.PrepareForCreate(cm)
	errs := s.Validate(cm)
	if calls != 1 || len(errs) != 2 {
		t.Errorf("defaulter calls %d, errors %v; want 1 call and name+label errors", calls, errs)
	}
	cm.Namespace = ""
	if errs := s.Validate(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ok"}}); len(errs) != 1 || errs[0].Field != "metadata.namespace" {
		t.Errorf("missing namespace: %v", errs)
	}
}

func TestFieldSelectors(t *testing.T) {
	var pods *Resource
	for _, r := range Builtins(Hooks{}, nil) {
		if r.Name == "pods" {
			pods = r
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n"}, Spec: corev1.PodSpec{NodeName: "node1", HostNetwork: true}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	set, err := pods.FieldSet(pod)
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]bool{
		"spec.nodeName=node1": true, "spec.nodeName!=": true, "spec.nodeName=other": false,
		"status.phase=Running,metadata.namespace=n": true, "spec.hostNetwork=true": true, "metadata.name=q": false,
	} {
		fs, err := fields.ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		if err := pods.CheckFieldSelector(fs); err != nil {
			t.Errorf("%s: %v", sel, err)
		}
		if got := fs.Matches(set); got != want {
			t.Errorf("%s matches %v, want %v", sel, got, want)
		}
	}
	if err := pods.CheckFieldSelector(fields.OneTermEqualSelector("spec.containers", "x")); err == nil || err.Error() != "field label not supported: spec.containers" {
		t.Errorf("unsupported field: %v", err)
	}
}

func TestKeys(t *testing.T) {
	reg := New()
	for _, r := range Builtins(Hooks{}, nil) {
		reg.Add(r)
	}
	cases := map[string]string{
		"v1/pods":                 "/registry/pods/ns/x",
		"v1/namespaces":           "/registry/namespaces/x",
		"apps/v1/deployments":     "/registry/apps/deployments/ns/x",
		"events.k8s.io/v1/events": "/registry/events/ns/x",
	}
	for _, r := range reg.All() {
		k := r.Group + "/" + r.Version + "/" + r.Name
		if r.Group == "" {
			k = r.Version + "/" + r.Name
		}
		if want, ok := cases[k]; ok {
			if got := r.Key("ns", "x"); got != want {
				t.Errorf("%s key %s, want %s", k, got, want)
			}
		}
	}
}

// A DaemonSet's template generation annotation starts at 1, grows with each
// template change, and is the server's: a client's value is replaced.
func TestDaemonSetTemplateGeneration(t *testing.T) {
	var ds *Resource
	for _, r := range Builtins(Hooks{}, nil) {
		if r.Name == "daemonsets" {
			ds = r
		}
	}
	gen := func(d *appsv1.DaemonSet) string { return d.Annotations[appsv1.DeprecatedTemplateGeneration] }
	image := func(img string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "n", Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "41"}},
			Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: img}}}}},
		}
	}
	created := image("a:1")
	ds.Strategy.PrepareForCreate(created)
	if gen(created) != "1" {
		t.Fatalf("created with template generation %q, want 1", gen(created))
	}
	same := image("a:1")
	same.Spec.MinReadySeconds = 5
	ds.Strategy.PrepareForUpdate(same, created)
	if gen(same) != "1" {
		t.Errorf("a change outside the template gave generation %q, want 1", gen(same))
	}
	changed := image("a:2")
	ds.Strategy.PrepareForUpdate(changed, same)
	if gen(changed) != "2" {
		t.Errorf("a template change gave generation %q, want 2", gen(changed))
	}
	status := changed.DeepCopy()
	status.Annotations[appsv1.DeprecatedTemplateGeneration] = "9"
	ds.Strategy.(StatusStrategist).StatusStrategy().PrepareForUpdate(status, changed)
	if gen(status) != "2" {
		t.Errorf("a status update changed the generation to %q", gen(status))
	}
}

// A Deployment's annotations count as Kubernetes' Deployment strategies
// count them: changing them moves the generation (the controller copies
// them to the ReplicaSets), and its status writes may set them (the
// controller writes the revision annotation so, without a new
// generation). Other kinds' annotations do neither.
func TestDeploymentAnnotations(t *testing.T) {
	strategies := map[string]Strategy{}
	for _, r := range Builtins(Hooks{}, nil) {
		strategies[r.Name] = r.Strategy
	}
	annotated := func(d *appsv1.Deployment, v string) *appsv1.Deployment {
		d.Annotations = map[string]string{"deployment.kubernetes.io/revision": v}
		return d
	}

	old, upd := annotated(deployment(1, 1), "1"), annotated(deployment(1, 1), "2")
	strategies["deployments"].PrepareForUpdate(upd, old)
	if upd.Generation != 4 {
		t.Errorf("annotation change: generation %d, want 4", upd.Generation)
	}
	old, upd = annotated(deployment(1, 1), "1"), annotated(deployment(1, 1), "1")
	upd.Labels = map[string]string{"a": "b"}
	strategies["deployments"].PrepareForUpdate(upd, old)
	if upd.Generation != 3 {
		t.Errorf("label change: generation %d, want 3", upd.Generation)
	}

	status := strategies["deployments"].(StatusStrategist).StatusStrategy()
	old, upd = annotated(deployment(1, 1), "1"), annotated(deployment(7, 5), "2")
	upd.Labels = map[string]string{"a": "b"}
	status.PrepareForUpdate(upd, old)
	if upd.Generation != 3 || *upd.Spec.Replicas != 1 || upd.Status.Replicas != 5 || upd.Labels != nil ||
		upd.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("status write: generation %d replicas %d status %d labels %v annotations %v; want 3 1 5, no labels, revision 2",
			upd.Generation, *upd.Spec.Replicas, upd.Status.Replicas, upd.Labels, upd.Annotations)
	}

	rs := func(v string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "n", Generation: 3, Annotations: map[string]string{"a": v}}}
	}
	oldRS, newRS := rs("1"), rs("2")
	strategies["replicasets"].PrepareForUpdate(newRS, oldRS)
	if newRS.Generation != 3 {
		t.Errorf("ReplicaSet annotation change: generation %d, want 3", newRS.Generation)
	}
	oldRS, newRS = rs("1"), rs("2")
	strategies["replicasets"].(StatusStrategist).StatusStrategy().PrepareForUpdate(newRS, oldRS)
	if newRS.Annotations["a"] != "1" {
		t.Errorf("ReplicaSet status write set annotations %v", newRS.Annotations)
	}
}
