package satoken

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// apiServer issues numbered tokens that live as long as asked (an hour by
// default), or the year of an extended kube-api-access token.
type apiServer struct {
	now      func() time.Time
	requests []*authenticationv1.TokenRequest
	accounts []string
	fail     error
	lifetime time.Duration // overrides the asked lifetime when set
}

func (a *apiServer) CreateToken(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	a.requests = append(a.requests, tr)
	a.accounts = append(a.accounts, ns+"/"+sa)
	if a.fail != nil {
		return nil, a.fail
	}
	life := time.Hour
	if tr.Spec.ExpirationSeconds != nil {
		life = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	}
	if a.lifetime > 0 {
		life = a.lifetime
	}
	out := tr.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(a.requests)), ExpirationTimestamp: metav1.NewTime(a.now().Add(life))}
	return out, nil
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + types.UID(name)},
		Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
}

func TestTokensAreReusedThenRenewed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	api := &apiServer{now: clock}
	m := New(api, clock)
	ctx := context.Background()
	pod := testPod("p")
	proj := &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}

	get := func(want string) {
		t.Helper()
		got, err := m.Token(ctx, pod, proj)
		if err != nil || got != want {
			t.Fatalf("at %s: Token = %q, %v; want %q", now.Format(time.TimeOnly), got, err, want)
		}
	}
	get("token-1")
	r := api.requests[0]
	if ref := r.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != "p" || ref.UID != pod.UID {
		t.Errorf("request bound to %+v, want the pod", ref)
	}
	if api.accounts[0] != "ns/robot" || *r.Spec.ExpirationSeconds != 3600 || r.Spec.Audiences != nil {
		t.Errorf("request for %s: %+v", api.accounts[0], r.Spec)
	}
	now = now.Add(47 * time.Minute)
	get("token-1") // 78% of its hour: still fresh
	now = now.Add(2 * time.Minute)
	get("token-2") // past 80%
	if len(api.requests) != 2 {
		t.Errorf("%d requests, want 2", len(api.requests))
	}

	// Another audience is another token.
	vault := &corev1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault", ExpirationSeconds: ptr.To[int64](3600)}
	if got, err := m.Token(ctx, pod, vault); err != nil || got != "token-3" || api.requests[2].Spec.Audiences[0] != "vault" {
		t.Errorf("vault token = %q, %v (request %+v)", got, err, api.requests[2].Spec)
	}

	// Renewal failing: the old token serves until it expires.
	api.fail = errors.New("connection refused")
	now = now.Add(50 * time.Minute)
	get("token-2")
	now = now.Add(11 * time.Minute)
	if _, err := m.Token(ctx, pod, proj); err == nil {
		t.Errorf("an expired token was served while renewal failed")
	}
	api.fail = nil
	get("token-6")

	m.ForgetPod(pod.UID)
	if m.Len() != 0 {
		t.Errorf("%d tokens kept after ForgetPod", m.Len())
	}
}

// TestLongTokensAreRenewedDaily: a token valid for a year (an extended
// kube-api-access token) is still renewed after a day.
func TestLongTokensAreRenewedDaily(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	api := &apiServer{now: clock, lifetime: 365 * 24 * time.Hour}
	m := New(api, clock)
	proj := &corev1.ServiceAccountTokenProjection{Path: "token"}
	for i, step := range []time.Duration{0, 23 * time.Hour, 2 * time.Hour} {
		now = now.Add(step)
		if _, err := m.Token(context.Background(), testPod("p"), proj); err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 1, 2}[i]; len(api.requests) != want {
			t.Errorf("after %s: %d requests, want %d", step, len(api.requests), want)
		}
	}
}

func TestTokensOfGonePodsExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := New(&apiServer{now: clock}, clock)
	proj := &corev1.ServiceAccountTokenProjection{Path: "token"}
	a, b := testPod("a"), testPod("b")
	b.UID = "uid-b"
	if _, err := m.Token(context.Background(), a, proj); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := m.Token(context.Background(), b, proj); err != nil {
		t.Fatal(err)
	}
	if m.Len() != 1 {
		t.Errorf("%d tokens cached, want only the live one", m.Len())
	}
	if _, err := m.Token(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, proj); err == nil {
		t.Errorf("a pod without a service account got a token")
	}
}
