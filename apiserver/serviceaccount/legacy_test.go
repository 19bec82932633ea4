package serviceaccount

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/storage"
)

// legacyFixture is a service account token Secret holding a token bound to
// it, as the token Secret controller leaves one.
type legacyFixture struct {
	tokens *Tokens
	store  *storage.Store
	token  string
	now    time.Time
}

const legacyKey = "/registry/secrets/default/robot-token"

func newLegacyFixture(t *testing.T, labels map[string]string) *legacyFixture {
	t.Helper()
	tokens, sa := newTokens(t)
	f := &legacyFixture{tokens: tokens, store: tokens.store.(*storage.Store), now: time.Date(2026, 3, 9, 23, 0, 0, 0, time.UTC)}
	tokens.now = func() time.Time { return f.now }
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Namespace: "default", UID: "uid-s", Labels: labels},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	tok, _, err := tokens.Issue(Binding{ServiceAccount: sa, Secret: secret, TTL: MaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	f.token = tok
	secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tok), "namespace": []byte("default")}
	secret.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}}
	data, _ := json.Marshal(secret)
	if _, err := f.store.Create(context.Background(), legacyKey, data, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

// use authenticates with the token and waits for the label write it set off.
func (f *legacyFixture) use() error {
	_, _, err := f.tokens.AuthenticateToken(context.Background(), f.token)
	f.tokens.tracker.wg.Wait()
	return err
}

func (f *legacyFixture) stored(t *testing.T) (*corev1.Secret, int64) {
	t.Helper()
	kv, err := f.store.Get(context.Background(), legacyKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := json.Unmarshal(kv.Value, s); err != nil {
		t.Fatal(err)
	}
	return s, kv.ModRevision
}

// TestLegacyTokenLastUsed: a request with a Secret-based token dates the
// Secret's kubernetes.io/legacy-token-last-used label (UTC), written once a
// day, leaving the rest of the Secret as it was.
func TestLegacyTokenLastUsed(t *testing.T) {
	f := newLegacyFixture(t, map[string]string{"team": "a"})
	if err := f.use(); err != nil {
		t.Fatal(err)
	}
	s, rev := f.stored(t)
	if got := s.Labels[LastUsedLabel]; got != "2026-03-09" {
		t.Fatalf("last-used label after the first use = %q, want 2026-03-09", got)
	}
	if s.Labels["team"] != "a" || string(s.Data[corev1.ServiceAccountTokenKey]) != f.token || len(s.ManagedFields) != 1 || s.ManagedFields[0].Manager != "kubectl-create" {
		t.Errorf("the label write changed more than the label: %+v", s.ObjectMeta)
	}

	// The same day (and another server's tomorrow) writes nothing.
	f.now = f.now.Add(30 * time.Minute) // 23:30
	for range 3 {
		if err := f.use(); err != nil {
			t.Fatal(err)
		}
	}
	if _, again := f.stored(t); again != rev {
		t.Errorf("the Secret was written again the same day (revision %d → %d)", rev, again)
	}

	f.now = f.now.Add(time.Hour) // the next day, UTC
	if err := f.use(); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.stored(t); s.Labels[LastUsedLabel] != "2026-03-10" {
		t.Errorf("last-used label the next day = %q, want 2026-03-10", s.Labels[LastUsedLabel])
	}
}

// TestLegacyTokenInvalidSince: a Secret labelled
// kubernetes.io/legacy-token-invalid-since refuses its token (401) and says
// how to allow it again; the use still dates the Secret and is counted.
func TestLegacyTokenInvalidSince(t *testing.T) {
	f := newLegacyFixture(t, map[string]string{InvalidSinceLabel: "2026-01-01"})
	err := f.use()
	if !errors.Is(err, authn.ErrInvalidCredential) || !strings.Contains(err.Error(), "has been marked invalid") ||
		!strings.Contains(err.Error(), "remove the '"+InvalidSinceLabel+"' label") {
		t.Fatalf("token of an invalidated Secret: %v, want it refused as marked invalid", err)
	}
	s, _ := f.stored(t)
	if s.Labels[LastUsedLabel] != "2026-03-09" {
		t.Errorf("a refused use left last-used %q, want 2026-03-09", s.Labels[LastUsedLabel])
	}
	m := &dto.Metric{}
	if err := f.tokens.used.invalidAuto.Write(m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("invalid_legacy_auto_token_uses_total = %v (%v), want 1", m.GetCounter().GetValue(), err)
	}

	// Taking the label off allows the token again.
	delete(s.Labels, InvalidSinceLabel)
	data, _ := json.Marshal(s)
	if _, err := f.store.Update(context.Background(), legacyKey, data, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.use(); err != nil {
		t.Errorf("token after the invalid-since label was removed: %v", err)
	}
}

// slowStore holds every write until release is closed, or fails it.
type slowStore struct {
	*storage.Store
	release chan struct{}
}

func (s slowStore) Update(ctx context.Context, key string, value []byte, rev int64, ttl time.Duration, opts ...storage.WriteOption) (*storage.KeyValue, error) {
	select {
	case <-s.release:
		return nil, errors.New("database unavailable")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestLegacyTokenLabelWriteDoesNotHoldUpRequests: the last-used write runs
// beside the request; a slow or failing write neither delays nor fails the
// authentication, and concurrent uses start one write.
func TestLegacyTokenLabelWriteDoesNotHoldUpRequests(t *testing.T) {
	f := newLegacyFixture(t, nil)
	slow := slowStore{Store: f.store, release: make(chan struct{})}
	f.tokens.store, f.tokens.tracker.store = slow, slow
	done := make(chan error, 1)
	go func() {
		for range 5 {
			if _, ok, err := f.tokens.AuthenticateToken(context.Background(), f.token); !ok || err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("authentication failed while the label write hung: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("authentication waited for the label write")
	}
	f.tokens.tracker.mu.Lock()
	inFlight := len(f.tokens.tracker.inFlight)
	f.tokens.tracker.mu.Unlock()
	if inFlight != 1 {
		t.Errorf("%d label writes under way for one Secret, want 1", inFlight)
	}
	close(slow.release)
	f.tokens.tracker.wg.Wait()
}
