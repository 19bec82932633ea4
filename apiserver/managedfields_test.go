package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestUpdateWithoutManagedFieldsKeepsThem: the controllers and the
// scheduler cache objects without managedFields (to save memory, as
// Kubernetes' do) and send updates from those copies. Such an update must
// keep the stored field ownership, not wipe it, as on Kubernetes.
func TestUpdateWithoutManagedFieldsKeepsThem(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := clientsetFor(t, srv.Config)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}},
		metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "creator" {
		t.Fatalf("managedFields after create = %+v, want one entry of manager creator", cm.ManagedFields)
	}
	cm.ManagedFields = nil
	cm.Data["b"] = "2"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "updater"})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, e := range cm.ManagedFields {
		managers[e.Manager] = true
	}
	if !managers["creator"] || !managers["updater"] || len(managers) != 2 {
		t.Fatalf("managedFields after an update without them = %+v, want entries of creator and updater", cm.ManagedFields)
	}
}

// TestCreateRecordsWhatTheClientSent: as on Kubernetes, the creator of a
// pod owns what it sent and what defaulting added, not what admission added
// (the service account, tolerations, priority) nor the status the server
// sets (phase, QoS class); a node's creator does not own the status it
// registered with. Status writes are owned by their writer, under the
// status subresource.
func TestCreateRecordsWhatTheClientSent(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := clientsetFor(t, srv.Config)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ServiceAccountName == "" || len(created.Spec.Tolerations) == 0 || created.Status.Phase == "" || created.Status.QOSClass == "" {
		t.Fatalf("admission and the server left spec %+v status %+v, want a service account, tolerations, phase and QoS class", created.Spec, created.Status)
	}
	owned := fieldsOf(t, created.ManagedFields, "creator", "")
	for _, want := range []string{`"f:image"`, `"f:dnsPolicy"`, `"f:terminationMessagePath"`} {
		if !strings.Contains(owned, want) {
			t.Errorf("creator does not own %s: %s", want, owned)
		}
	}
	for _, not := range []string{`"f:status"`, `"f:tolerations"`, `"f:serviceAccountName"`, `"f:priority"`} {
		if strings.Contains(owned, not) {
			t.Errorf("creator owns %s, which it did not send: %s", not, owned)
		}
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	n, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{FieldManager: "registrar"})
	if err != nil {
		t.Fatal(err)
	}
	if n.Status.Capacity.Cpu().String() != "4" {
		t.Fatalf("node created with capacity 4 stored %v", n.Status.Capacity)
	}
	if owned := fieldsOf(t, n.ManagedFields, "registrar", ""); strings.Contains(owned, `"f:status"`) || !strings.Contains(owned, `"f:zone"`) {
		t.Errorf("node creator owns %s, want its labels and not the status", owned)
	}
	n.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("8Gi")
	n, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{FieldManager: "kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	if owned := fieldsOf(t, n.ManagedFields, "kubelet", "status"); !strings.Contains(owned, `"f:memory"`) {
		t.Errorf("status writer owns %s, want the memory it added", owned)
	}
}

// fieldsOf returns the fields manager owns through subresource, as JSON.
func fieldsOf(t *testing.T, entries []metav1.ManagedFieldsEntry, manager, subresource string) string {
	t.Helper()
	for _, e := range entries {
		if e.Manager == manager && e.Subresource == subresource && e.FieldsV1 != nil {
			return string(e.FieldsV1.Raw)
		}
	}
	t.Fatalf("no managedFields entry of %s (subresource %q) in %+v", manager, subresource, entries)
	return ""
}
