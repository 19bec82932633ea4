package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
