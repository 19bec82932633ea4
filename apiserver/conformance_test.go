package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// fixtures holds a minimal valid object of every built-in resource (and of
// CRDs), keyed by group/version/resource. Names are filled in by the test.
var fixtures = map[string]string{
	"v1/namespaces":      `{"apiVersion":"v1","kind":"Namespace"}`,
	"v1/nodes":           `{"apiVersion":"v1","kind":"Node"}`,
	"v1/pods":            `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
	"v1/services":        `{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":80}]}}`,
	"v1/endpoints":       `{"apiVersion":"v1","kind":"Endpoints"}`,
	"v1/configmaps":      `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}`,
	"v1/secrets":         `{"apiVersion":"v1","kind":"Secret","stringData":{"a":"b"}}`,
	"v1/serviceaccounts": `{"apiVersion":"v1","kind":"ServiceAccount"}`,
	"v1/events": `{"apiVersion":"v1","kind":"Event","involvedObject":{"kind":"Pod","name":"p","namespace":"conf"},"reason":"R","message":"m","type":"Normal",
		"firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1,"source":{"component":"test"}}`,
	"v1/replicationcontrollers":          `{"apiVersion":"v1","kind":"ReplicationController","spec":{"selector":{"a":"b"},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"v1/resourcequotas":                  `{"apiVersion":"v1","kind":"ResourceQuota","spec":{"hard":{"pods":"10"}}}`,
	"v1/limitranges":                     `{"apiVersion":"v1","kind":"LimitRange","spec":{"limits":[{"type":"Container","default":{"cpu":"100m"}}]}}`,
	"v1/persistentvolumes":               `{"apiVersion":"v1","kind":"PersistentVolume","spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/conf"}}}`,
	"v1/persistentvolumeclaims":          `{"apiVersion":"v1","kind":"PersistentVolumeClaim","spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
	"storage.k8s.io/v1/storageclasses":   `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","provisioner":"example.com/conf"}`,
	"apps/v1/deployments":                `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/v1/replicasets":                `{"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/v1/statefulsets":               `{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"serviceName":"s","selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/v1/daemonsets":                 `{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
	"apps/v1/controllerrevisions":        `{"apiVersion":"apps/v1","kind":"ControllerRevision","revision":1}`,
	"batch/v1/jobs":                      `{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
	"batch/v1/cronjobs":                  `{"apiVersion":"batch/v1","kind":"CronJob","spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
	"coordination.k8s.io/v1/leases":      `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","spec":{"holderIdentity":"x","leaseDurationSeconds":15}}`,
	"discovery.k8s.io/v1/endpointslices": `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}]}`,
	"events.k8s.io/v1/events": `{"apiVersion":"events.k8s.io/v1","kind":"Event","eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"test/ctl","reportingInstance":"i","action":"Act","reason":"R","type":"Normal",
		"regarding":{"kind":"Pod","name":"p","namespace":"conf"}}`,
	"networking.k8s.io/v1/ingresses":                   `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","spec":{"defaultBackend":{"service":{"name":"web","port":{"number":80}}}}}`,
	"networking.k8s.io/v1/ingressclasses":              `{"apiVersion":"networking.k8s.io/v1","kind":"IngressClass","spec":{"controller":"example.com/conf"}}`,
	"networking.k8s.io/v1/networkpolicies":             `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","spec":{"podSelector":{}}}`,
	"policy/v1/poddisruptionbudgets":                   `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":1,"selector":{"matchLabels":{"a":"b"}}}}`,
	"rbac.authorization.k8s.io/v1/roles":               `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
	"rbac.authorization.k8s.io/v1/rolebindings":        `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"},"subjects":[{"kind":"User","name":"u","apiGroup":"rbac.authorization.k8s.io"}]}`,
	"rbac.authorization.k8s.io/v1/clusterroles":        `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
	"rbac.authorization.k8s.io/v1/clusterrolebindings": `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r"},"subjects":[{"kind":"User","name":"u","apiGroup":"rbac.authorization.k8s.io"}]}`,
	"scheduling.k8s.io/v1/priorityclasses":             `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","value":1000}`,
	"apiextensions.k8s.io/v1/customresourcedefinitions": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"spec":{"group":"conf.example.com","scope":"Namespaced","names":{"plural":"PLURAL","kind":"Thing"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
}

func gvrKey(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}

// TestRegistryConformance drives every registered resource through the same
// create, get, list, update, conflict, patch, watch and delete sequence
// against a real SQLite store.
func TestRegistryConformance(t *testing.T) {
	srv := apiservertest.Start(t)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if _, err := dc.Resource(nsGVR).Create(ctx, mustObj(t, fixtures["v1/namespaces"], "conf", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace conf: %v", err)
	}
	seen := 0
	for _, res := range srv.Server.Registry().All() {
		gvr := schema.GroupVersionResource{Group: res.Group, Version: res.Version, Resource: res.Name}
		if res.Virtual != nil {
			continue // create-only reviews store nothing; rbac_test.go covers them
		}
		fx, ok := fixtures[gvrKey(gvr)]
		if !ok {
			t.Errorf("no conformance fixture for %s: add one", gvrKey(gvr))
			continue
		}
		seen++
		t.Run(gvrKey(gvr), func(t *testing.T) {
			name := "conf-" + res.Singular
			if res.Kind == "CustomResourceDefinition" {
				name = "things.conf.example.com"
				fx = replaceAll(fx, "PLURAL", "things")
			}
			ns := ""
			ri := dynamic.ResourceInterface(dc.Resource(gvr))
			if res.Namespaced {
				ns = "conf"
				ri = dc.Resource(gvr).Namespace(ns)
			}
			conformance(t, ctx, ri, mustObj(t, fx, name, ns), res.Kind)
		})
	}
	if seen < 28 {
		t.Errorf("only %d resources checked; the registry lost some", seen)
	}
}

func replaceAll(s, old, new string) string {
	out := ""
	for {
		i := indexOf(s, old)
		if i < 0 {
			return out + s
		}
		out += s[:i] + new
		s = s[i+len(old):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func mustObj(t *testing.T, js, name, ns string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	u.SetName(name)
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

func conformance(t *testing.T, ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, kind string) {
	name := obj.GetName()
	w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		t.Fatalf("create: system metadata missing: uid=%q rv=%q ts=%v", created.GetUID(), created.GetResourceVersion(), created.GetCreationTimestamp())
	}
	if created.GetKind() != kind {
		t.Errorf("create: kind %q, want %q", created.GetKind(), kind)
	}
	if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: got %v, want AlreadyExists", err)
	}
	list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].GetUID() != created.GetUID() {
		t.Errorf("list by name: %d items, want the created one", len(list.Items))
	}
	// Update with the current resourceVersion succeeds and moves it. The
	// server's own controllers may write the object between the get and
	// the update (the CRD controller its conditions, right after the
	// create), which is a conflict as it should be: then read it again.
	var got, updated *unstructured.Unstructured
	for attempt := 1; ; attempt++ {
		if got, err = ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("get: %v", err)
		}
		got.SetLabels(map[string]string{"conformance": "updated"})
		updated, err = ri.Update(ctx, got, metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) || attempt == 5 {
			t.Fatalf("update (attempt %d): %v", attempt, err)
		}
	}
	if updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Errorf("update kept resourceVersion %s", got.GetResourceVersion())
	}
	// Update with the old resourceVersion is a conflict.
	got.SetLabels(map[string]string{"conformance": "stale"})
	if _, err := ri.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: got %v, want Conflict", err)
	}
	patched, err := ri.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"conformance":"patched"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if patched.GetAnnotations()["conformance"] != "patched" || patched.GetLabels()["conformance"] != "updated" {
		t.Errorf("merge patch: labels %v annotations %v", patched.GetLabels(), patched.GetAnnotations())
	}
	// In the background, as kubectl deletes: without a policy Jobs and
	// ReplicationControllers orphan their pods, held by the orphan finalizer
	// until the garbage collector (not running here) has done so.
	background := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if kind == "Namespace" || kind == "CustomResourceDefinition" || kind == "PersistentVolumeClaim" || kind == "PersistentVolume" {
		// These finish deleting asynchronously: a namespace waits for its
		// controller, a CRD for the cleanup of its objects, claims and
		// volumes for the volume-protection controller.
		expectEvents(t, w, watch.Added, watch.Modified, watch.Modified)
		return
	}
	if _, err := ri.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: got %v, want NotFound", err)
	}
	expectEvents(t, w, watch.Added, watch.Modified, watch.Modified, watch.Deleted)
}

// expectEvents reads events until the wanted sequence has been seen in
// order (other events, such as a controller's status writes, may interleave).
func expectEvents(t *testing.T, w watch.Interface, want ...watch.EventType) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var got []watch.EventType
	for i := 0; i < len(want); {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v, want %v", got, want)
			}
			got = append(got, ev.Type)
			if ev.Type == want[i] {
				i++
			}
		case <-timeout:
			t.Fatalf("watch events %v, want %v", got, want)
		}
	}
	_ = fmt.Sprint
}
