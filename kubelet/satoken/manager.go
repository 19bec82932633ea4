package satoken

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Requester asks the API server for a token of a service account
// (POST serviceaccounts/<name>/token); a clientset's
// CoreV1().ServiceAccounts(ns).CreateToken does it.
type Requester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// maxAge is how old a token may get before it is renewed whatever its
// lifetime, as the kubelet's token manager.
const maxAge = 24 * time.Hour

// key tells tokens apart: the same pod may project several, for other
// audiences or lifetimes.
type key struct {
	namespace, account, pod string
	uid                     types.UID
	audience                string
	seconds                 int64
}

type entry struct {
	token    string
	obtained time.Time
	expires  time.Time
}

// refreshAt is when e should be replaced.
func (e entry) refreshAt() time.Time {
	at := e.obtained.Add(e.expires.Sub(e.obtained) * 8 / 10)
	if limit := e.obtained.Add(maxAge); limit.Before(at) {
		return limit
	}
	return at
}

// Manager caches pods' tokens; it is safe for concurrent use.
type Manager struct {
	req Requester
	now func() time.Time

	mu     sync.Mutex
	tokens map[key]entry
}

// New returns a manager requesting tokens through req; now is its clock
// (time.Now when nil).
func New(req Requester, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{req: req, now: now, tokens: map[key]entry{}}
}

// Token returns the token for projection p of pod: the cached one while it
// is fresh, else a new one bound to the pod.
func (m *Manager) Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		return "", fmt.Errorf("pod %s/%s names no service account", pod.Namespace, pod.Name)
	}
	k := key{namespace: pod.Namespace, account: account, pod: pod.Name, uid: pod.UID, audience: p.Audience}
	if p.ExpirationSeconds != nil {
		k.seconds = *p.ExpirationSeconds
	}
	now := m.now()
	m.mu.Lock()
	cached, ok := m.tokens[k]
	m.mu.Unlock()
	if ok && now.Before(cached.refreshAt()) {
		return cached.token, nil
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		tr.Spec.Audiences = []string{p.Audience}
	}
	out, err := m.req.CreateToken(ctx, pod.Namespace, account, tr)
	if err == nil && (out == nil || out.Status.Token == "") {
		err = errors.New("the API server returned no token")
	}
	if err != nil {
		// A token that is merely due for renewal still works.
		if ok && now.Before(cached.expires) {
			return cached.token, nil
		}
		return "", fmt.Errorf("requesting a token of service account %s/%s for pod %s: %w", pod.Namespace, account, pod.Name, err)
	}
	e := entry{token: out.Status.Token, obtained: now, expires: out.Status.ExpirationTimestamp.Time}
	if !e.expires.After(now) {
		return "", fmt.Errorf("the API server returned a token of service account %s/%s that expires at %s", pod.Namespace, account, e.expires.Format(time.RFC3339))
	}
	m.mu.Lock()
	// Tokens of pods that went without ForgetPod end here.
	for old, oe := range m.tokens {
		if !now.Before(oe.expires) {
			delete(m.tokens, old)
		}
	}
	m.tokens[k] = e
	m.mu.Unlock()
	return e.token, nil
}

// ForgetPod drops the tokens of the pod with uid.
func (m *Manager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.tokens {
		if k.uid == uid {
			delete(m.tokens, k)
		}
	}
}

// Len is how many tokens are cached.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tokens)
}
