package apiserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/storage"
)

// squatter makes a generated name collide for real: before the first
// creates of ConfigMaps whose name starts with "gen-", it writes the same
// key itself, so the store answers that the key exists.
type squatter struct {
	*storage.Store
	mu     sync.Mutex
	remain int // collisions still to cause
	taken  int
}

func (s *squatter) Create(ctx context.Context, key string, value []byte, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error) {
	s.mu.Lock()
	squat := strings.HasPrefix(key, "/registry/configmaps/default/gen-") && s.remain > 0
	if squat {
		s.remain--
	}
	s.mu.Unlock()
	if squat {
		if _, err := s.Store.Create(ctx, key, value, ttl); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.taken++
		s.mu.Unlock()
	}
	return s.Store.Create(ctx, key, value, ttl, opts...)
}

// TestGenerateNameRetriesACollision: a create with generateName whose
// generated name is taken tries another, as Kubernetes does (1.32+), and
// reports AlreadyExists only after eight collisions; a given name that is
// taken is AlreadyExists at once.
func TestGenerateNameRetriesACollision(t *testing.T) {
	sq := &squatter{remain: 3}
	srv := apiservertest.StartWrapped(t, func(st *storage.Store) endpoints.Store { sq.Store = st; return sq }, nil)
	cms := clientsetFor(t, srv.Config).CoreV1().ConfigMaps("default")
	ctx := context.Background()

	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after 3 collisions: %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for _, item := range list.Items {
		if strings.HasPrefix(item.Name, "gen-") {
			names++
		}
	}
	if sq.taken != 3 || names != 4 || !strings.HasPrefix(cm.Name, "gen-") {
		t.Fatalf("created %q after %d collisions; %d gen- ConfigMaps (want 3 squatted + 1)", cm.Name, sq.taken, names)
	}

	sq.mu.Lock()
	sq.remain = 8
	sq.mu.Unlock()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create after 8 collisions: %v, want AlreadyExists", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create of a taken given name: %v, want AlreadyExists", err)
	}
}
