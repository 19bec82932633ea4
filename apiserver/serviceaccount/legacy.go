package serviceaccount

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/storage"
)

// Labels Kubernetes keeps on Secret-based (legacy) service account tokens,
// each a UTC date in DateFormat: when the API server last saw the token
// used (LegacyServiceAccountTokenTracking), and since when the legacy
// token cleaner holds it unused and refused (LegacyServiceAccountTokenCleanUp).
const (
	LastUsedLabel     = "kubernetes.io/legacy-token-last-used"
	InvalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"
	DateFormat        = "2006-01-02"
)

// The ConfigMap kube-system/TrackingConfigMap says, in its TrackingSinceKey,
// the day the API servers began to track legacy token use: a token Secret
// without LastUsedLabel has not been used since then.
const (
	TrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	TrackingSinceKey  = "since"
)

// legacyActor is recorded in history for the last-used labels, as for the
// other objects the API server writes itself.
const legacyActor = "system:apiserver"

// A legacy token is one a Secret of type kubernetes.io/service-account-token
// holds: what the token Secret controller writes there, a token bound to the
// Secret that stands in for Kubernetes' non-expiring legacy ones. A token
// merely bound to a Secret through the TokenRequest API is not one, as in
// Kubernetes, where only tokens stored in such Secrets are tracked.
func isLegacy(secret *corev1.Secret, tok string) bool {
	return secret.Type == corev1.SecretTypeServiceAccountToken &&
		subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(tok)) == 1
}

// issuedToHold reports whether a token bound to secret, which the Secret
// does not hold (any longer), was issued for it to hold: the Secret is a
// service account token Secret and the token has the whole lifetime the
// token Secret controller asks for (MaxTTL, standing in for Kubernetes'
// legacy tokens, which never expire). Kubernetes' legacy validator accepts
// such a token only while its Secret holds it, so clearing data.token (the
// controller then writes a new one) revokes the old one; left to the
// ordinary Secret binding, it would stay valid for 136 years.
func issuedToHold(secret *corev1.Secret, c *claims) bool {
	return secret.Type == corev1.SecretTypeServiceAccountToken && c.ExpiresAt != nil && c.IssuedAt != nil &&
		c.ExpiresAt.Sub(c.IssuedAt.Time) == MaxTTL
}

// checkLegacy is the legacy token's part of authentication, as Kubernetes'
// legacy validator: a Secret being deleted refuses its token at once (the
// minute's leeway of tokens merely bound to an object being deleted is not
// given to the token a Secret holds), and such a use is not tracked; a
// Secret labelled invalid-since refuses its token; every other use,
// refused or not, counts in the metrics and dates the Secret's last-used
// label.
func (t *Tokens) checkLegacy(ctx context.Context, secret *corev1.Secret, sa *corev1.ServiceAccount) error {
	if secret.DeletionTimestamp != nil {
		return fmt.Errorf("%w: service account token: secret %s/%s has been deleted", authn.ErrInvalidCredential, secret.Namespace, secret.Name)
	}
	t.tracker.used(ctx, secret, t.now())
	if _, invalid := secret.Labels[InvalidSinceLabel]; invalid {
		t.used.invalidAuto.Inc()
		return fmt.Errorf("%w: the token in secret %s/%s for service account %s/%s has been marked invalid. "+
			"Use tokens from the TokenRequest API or manually created secret-based tokens, "+
			"or remove the '%s' label from the secret to temporarily allow use of this token",
			authn.ErrInvalidCredential, secret.Namespace, secret.Name, sa.Namespace, sa.Name, InvalidSinceLabel)
	}
	// A token whose Secret the account lists was generated for it
	// (Kubernetes before 1.24); others were created by hand.
	auto := false
	for _, ref := range sa.Secrets {
		if ref.Name == secret.Name {
			auto = true
			break
		}
	}
	if auto {
		t.used.legacyAuto.Inc()
	} else {
		t.used.legacyManual.Inc()
	}
	return nil
}

// lastUsedTracker writes the last-used label of legacy token Secrets. The
// write never holds up or fails the request that used the token: it runs
// in the background, at most one at a time per Secret, and only when the
// label does not already say today (or tomorrow: another API server with
// its clock ahead may have written it), so a Secret is written about once a
// day however busy its token. A failed write is logged; the next use of
// the token tries again.
type lastUsedTracker struct {
	store Store
	log   *slog.Logger

	mu       sync.Mutex
	inFlight map[string]bool // Secret keys being written
	wg       sync.WaitGroup  // the writes under way (tests wait for them)
}

// lastUsedWriteTimeout bounds one label write.
const lastUsedWriteTimeout = 10 * time.Second

// current reports whether a last-used date needs no new write on day now.
func current(lastUsed string, now time.Time) bool {
	now = now.UTC()
	return lastUsed == now.Format(DateFormat) || lastUsed == now.AddDate(0, 0, 1).Format(DateFormat)
}

// used records that secret's token was used at now.
func (l *lastUsedTracker) used(ctx context.Context, secret *corev1.Secret, now time.Time) {
	if current(secret.Labels[LastUsedLabel], now) {
		return
	}
	key := secretKey(secret.Namespace, secret.Name)
	l.mu.Lock()
	if l.inFlight[key] {
		l.mu.Unlock()
		return
	}
	l.inFlight[key] = true
	l.wg.Add(1)
	l.mu.Unlock()
	// The request may end before the write does.
	ctx = storage.WithActor(context.WithoutCancel(ctx), legacyActor)
	go func() {
		defer l.wg.Done()
		defer func() {
			l.mu.Lock()
			delete(l.inFlight, key)
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(ctx, lastUsedWriteTimeout)
		defer cancel()
		if err := l.write(ctx, key, secret.UID, now); err != nil {
			l.log.Warn("serviceaccount: labelling legacy token secret with its last-used date", "secret", secret.Namespace+"/"+secret.Name, "err", err)
		}
	}()
}

// write sets the last-used label of the Secret at key (of uid) to now's
// date, unless it is current already. Only the label changes: the rest of
// the stored object, managedFields included, is written back as it was, and
// the write is a compare-and-swap on the revision read, retried when the
// Secret changed in between.
func (l *lastUsedTracker) write(ctx context.Context, key string, uid types.UID, now time.Time) error {
	for attempt := 0; attempt < 5; attempt++ {
		kv, err := l.store.Get(ctx, key, 0)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// Numbers stay as written (no float64 round trip).
		var raw map[string]any
		dec := json.NewDecoder(bytes.NewReader(kv.Value))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		meta, _ := raw["metadata"].(map[string]any)
		if meta == nil || meta["uid"] != string(uid) {
			return nil // deleted and recreated: the new Secret was not used
		}
		labels, _ := meta["labels"].(map[string]any)
		if last, _ := labels[LastUsedLabel].(string); current(last, now) {
			return nil
		}
		if labels == nil {
			labels = map[string]any{}
			meta["labels"] = labels
		}
		labels[LastUsedLabel] = now.UTC().Format(DateFormat)
		data, err := json.Marshal(raw)
		if err != nil {
			return err
		}
		_, err = l.store.Update(ctx, key, data, kv.ModRevision, 0)
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%s kept changing", key)
}

func secretKey(namespace, name string) string {
	return "/registry/secrets/" + namespace + "/" + name
}
