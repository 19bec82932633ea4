package delegated

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// countingTransport counts the reviews the guard sends to the API server.
type countingTransport struct {
	next                 http.RoundTripper
	tokenReviews, access atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		c.tokenReviews.Add(1)
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		c.access.Add(1)
	}
	return c.next.RoundTrip(r)
}

// Answers are reused for CacheTTL, refusals too, then asked for again; the
// scraper sees the same answer either way.
func TestGuardReusesReviewsForTheirTTL(t *testing.T) {
	api := apiservertest.Start(t)
	counter := &countingTransport{}
	rc := rest.CopyConfig(api.Config)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	clock := testingclock.NewFakeClock(time.Now())
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	g := newGuard(kubernetes.NewForConfigOrDie(rc), ok, clock)

	admin := kubernetes.NewForConfigOrDie(api.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(token string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		g.ServeHTTP(rec, req)
		return rec.Code
	}
	reviews := func() (int32, int32) { return counter.tokenReviews.Load(), counter.access.Load() }

	for i := 0; i < 3; i++ {
		if code := scrape(apiservertest.AdminToken); code != 200 {
			t.Fatalf("admin scrape %d: %d", i, code)
		}
		if code := scrape(tr.Status.Token); code != 403 {
			t.Fatalf("unbound account's scrape %d: %d", i, code)
		}
		if code := scrape("forged"); code != 401 {
			t.Fatalf("forged scrape %d: %d", i, code)
		}
	}
	if tokens, access := reviews(); tokens != 3 || access != 2 {
		t.Fatalf("within the TTL: %d token reviews and %d access reviews, want 3 and 2 (one per caller)", tokens, access)
	}
	clock.Step(CacheTTL + time.Second)
	if code := scrape(apiservertest.AdminToken); code != 200 {
		t.Fatalf("admin scrape after the TTL: %d", code)
	}
	if tokens, access := reviews(); tokens != 4 || access != 3 {
		t.Fatalf("after the TTL: %d token reviews and %d access reviews, want 4 and 3", tokens, access)
	}
}
