package apiserver_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/storage"
)

// staleCache answers cached reads of some keys with an old state, as a
// server's cache may be behind the database for a moment.
type staleCache struct {
	*storage.Store
	mu    sync.Mutex
	stale map[string]*storage.KeyValue
}

func (s *staleCache) GetCached(key string) (*storage.KeyValue, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kv, ok := s.stale[key]; ok {
		return kv, true, true
	}
	return s.Store.GetCached(key)
}

// staleConfigMap starts a server whose store's cache is stale for one
// configmap, default/cm: the cache holds its first state (v=1), the
// database its second (v=2), which it returns.
func staleConfigMap(t *testing.T) (typedcorev1.ConfigMapInterface, *corev1.ConfigMap) {
	t.Helper()
	sc := &staleCache{stale: map[string]*storage.KeyValue{}}
	srv := apiservertest.StartWrapped(t, func(st *storage.Store) endpoints.Store { sc.Store = st; return sc }, nil)
	cs := clientsetFor(t, srv.Config)
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("default")
	v1, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := "/registry/configmaps/default/cm"
	old, err := sc.Store.Get(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	v1.Data["v"] = "2"
	v2, err := cms.Update(ctx, v1, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.mu.Lock()
	sc.stale[key] = old // from now on the cache says v1
	sc.mu.Unlock()
	return cms, v2
}

// TestUpdatesFromAStaleCache: updates read the object from the store's
// cache first; when that copy is stale they must still behave exactly as
// on a fresh read (no false conflict, patches applied to the current
// object, real conflicts still 409).
func TestUpdatesFromAStaleCache(t *testing.T) {
	cms, v2 := staleConfigMap(t)
	ctx := context.Background()
	v2.Data["v"] = "3"
	v3, err := cms.Update(ctx, v2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update with the current resourceVersion over a stale cache: %v", err)
	}
	patched, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"x":"y"}}`), metav1.PatchOptions{})
	if err != nil || patched.Data["v"] != "3" || patched.Data["x"] != "y" {
		t.Fatalf("merge patch over a stale cache: %v %v", patched.Data, err)
	}
	v3.Data["v"] = "4"
	if _, err := cms.Update(ctx, v3, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with an outdated resourceVersion: %v, want Conflict", err)
	}
	same, err := cms.Update(ctx, patched, metav1.UpdateOptions{})
	if err != nil || same.ResourceVersion != patched.ResourceVersion {
		t.Fatalf("no-op update: %v, resourceVersion %s -> %s", err, patched.ResourceVersion, same.ResourceVersion)
	}
}

// TestGetAnyVersionMayComeFromTheCache: a GET with resourceVersion=0 asks
// for any version and may be answered from the store's cache, as
// Kubernetes answers it from its watch cache; a GET without one must be
// the newest state, whatever the cache holds. A key the cache does not
// hold is read from the database either way.
func TestGetAnyVersionMayComeFromTheCache(t *testing.T) {
	cms, _ := staleConfigMap(t)
	ctx := context.Background()
	if got, err := cms.Get(ctx, "cm", metav1.GetOptions{}); err != nil || got.Data["v"] != "2" {
		t.Fatalf("GET without resourceVersion: %v %v, want the newest state (v=2)", got.Data, err)
	}
	if got, err := cms.Get(ctx, "cm", metav1.GetOptions{ResourceVersion: "0"}); err != nil || got.Data["v"] != "1" {
		t.Fatalf("GET with resourceVersion=0: %v %v, want the cache's state (v=1)", got.Data, err)
	}
	if _, err := cms.Get(ctx, "nothing", metav1.GetOptions{ResourceVersion: "0"}); !apierrors.IsNotFound(err) {
		t.Fatalf("GET with resourceVersion=0 of a missing object: %v, want NotFound", err)
	}
}
