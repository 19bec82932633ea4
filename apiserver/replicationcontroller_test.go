package apiserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func testRC(name string) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: ptr.To[int32](2),
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: testPod("").Spec},
		},
	}
}

// TestReplicationControllersServed: core/v1 serves replicationcontrollers
// as kube-apiserver v1.33 does, with status and scale subresources,
// generation, validation, field selectors, table columns and quota.
func TestReplicationControllersServed(t *testing.T) {
	cs, srv := clientset(t)
	ctx := context.Background()

	list, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		subs[r.Name] = r
	}
	rcs, ok := subs["replicationcontrollers"]
	if !ok || rcs.Kind != "ReplicationController" || !rcs.Namespaced || !slices.Equal(rcs.ShortNames, []string{"rc"}) || !slices.Equal(rcs.Categories, []string{"all"}) {
		t.Fatalf("discovery: %+v", rcs)
	}
	if sc, ok := subs["replicationcontrollers/scale"]; !ok || sc.Group != "autoscaling" || sc.Version != "v1" || sc.Kind != "Scale" {
		t.Errorf("discovery scale: %+v", sc)
	}
	if _, ok := subs["replicationcontrollers/status"]; !ok {
		t.Error("discovery: no replicationcontrollers/status")
	}

	api := cs.CoreV1().ReplicationControllers("default")
	in := testRC("web")
	in.Status.Replicas = 7 // a client cannot set status on create
	rc, err := api.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Defaulting filled the selector and labels from the template.
	if rc.Generation != 1 || rc.Status.Replicas != 0 || rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" {
		t.Fatalf("created: generation %d status %+v selector %v labels %v", rc.Generation, rc.Status, rc.Spec.Selector, rc.Labels)
	}

	// Status is written through the status subresource only.
	rc.Status.Replicas = 5
	rc.Annotations = map[string]string{"a": "b"}
	if rc, err = api.Update(ctx, rc, metav1.UpdateOptions{}); err != nil || rc.Status.Replicas != 0 || rc.Generation != 1 {
		t.Fatalf("main update: %v status %+v generation %d (want status ignored, generation kept)", err, rc.Status, rc.Generation)
	}
	rc.Status.Replicas, rc.Status.ObservedGeneration = 2, 1
	if rc, err = api.UpdateStatus(ctx, rc, metav1.UpdateOptions{}); err != nil || rc.Status.Replicas != 2 {
		t.Fatalf("status update: %v %+v", err, rc.Status)
	}

	// The scale subresource shows the selector map in selector syntax,
	// and scaling changes the spec, which bumps generation.
	sc, err := api.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 2 || sc.Status.Replicas != 2 || sc.Status.Selector != "app=web" {
		t.Fatalf("get scale: %v %+v", err, sc)
	}
	sc.Spec.Replicas = 4
	if sc, err = api.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil || sc.Spec.Replicas != 4 {
		t.Fatalf("update scale: %v %+v", err, sc)
	}
	if rc, err = api.Get(ctx, "web", metav1.GetOptions{}); err != nil || *rc.Spec.Replicas != 4 || rc.Generation != 2 {
		t.Fatalf("after scale: %v replicas %d generation %d", err, *rc.Spec.Replicas, rc.Generation)
	}

	bad := testRC("bad")
	bad.Spec.Replicas = ptr.To[int32](-1)
	if _, err := api.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("negative replicas: %v, want Invalid", err)
	}
	bad = testRC("bad")
	bad.Spec.Selector = map[string]string{"app": "other"}
	if _, err := api.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("selector not matching the template: %v, want Invalid", err)
	}

	// status.replicas is a field selector, as in Kubernetes.
	if l, err := api.List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=2"}); err != nil || len(l.Items) != 1 {
		t.Errorf("field selector status.replicas=2: %v %d items", err, len(l.Items))
	}
	if l, err := api.List(ctx, metav1.ListOptions{FieldSelector: "status.replicas=3"}); err != nil || len(l.Items) != 0 {
		t.Errorf("field selector status.replicas=3: %v %d items", err, len(l.Items))
	}

	// kubectl's columns.
	resp, data := newClient(t, srv).do("GET", "/api/v1/namespaces/default/replicationcontrollers", "", nil,
		"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil || resp.StatusCode != 200 {
		t.Fatalf("table: %d %s", resp.StatusCode, data)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if want := []string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"}; !slices.Equal(cols, want) ||
		len(table.Rows) != 1 || table.Rows[0].Cells[1] != float64(4) || table.Rows[0].Cells[7] != "app=web" {
		t.Errorf("table columns %v rows %+v", cols, table.Rows)
	}

	// Quota counts them under both names.
	namespace(t, cs, "rcq", nil)
	hard := corev1.ResourceList{corev1.ResourceReplicationControllers: resource.MustParse("1"), "count/replicationcontrollers": resource.MustParse("1")}
	q, err := cs.CoreV1().ResourceQuotas("rcq").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "rc"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status.Hard, q.Status.Used = hard, corev1.ResourceList{}
	for n := range hard {
		q.Status.Used[n] = resource.MustParse("0")
	}
	if _, err := cs.CoreV1().ResourceQuotas("rcq").UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ReplicationControllers("rcq").Create(ctx, testRC("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ReplicationControllers("rcq").Create(ctx, testRC("two"), metav1.CreateOptions{})
	forbiddenWith(t, err, "exceeded quota: rc, requested: count/replicationcontrollers=1,replicationcontrollers=1, used: count/replicationcontrollers=1,replicationcontrollers=1, limited: count/replicationcontrollers=1,replicationcontrollers=1")
}
