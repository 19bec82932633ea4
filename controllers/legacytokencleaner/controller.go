package legacytokencleaner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Name is the controller's name in logs and the manager.
const Name = "legacy-serviceaccount-token-cleaner"

// Defaults, as kube-controller-manager's: tokens unused for a year are
// marked invalid, and deleted a year later; the Secrets are looked at once
// a day.
const (
	DefaultCleanUpPeriod = 365 * 24 * time.Hour
	SyncInterval         = 24 * time.Hour
)

// Kubernetes' names, the ones the API server writes and reads (see
// apiserver/serviceaccount): the labels on token Secrets, each a UTC date,
// and the ConfigMap saying since when the API servers date token use.
const (
	lastUsedLabel     = "kubernetes.io/legacy-token-last-used"
	invalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"
	dateFormat        = "2006-01-02"
	trackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	trackingSinceKey  = "since"
)

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
	// CleanUpPeriod is how long a token must have gone unused before it
	// is marked invalid, and stayed invalid before it is deleted
	// (--legacy-service-account-token-clean-up-period); 0 takes
	// DefaultCleanUpPeriod.
	CleanUpPeriod time.Duration
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

// Controller marks unused legacy token Secrets invalid and deletes those
// invalid for long enough.
type Controller struct {
	client   kubernetes.Interface
	secrets  corelisters.SecretLister
	accounts corelisters.ServiceAccountLister
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	period   time.Duration
	now      func() time.Time
	log      *slog.Logger
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, secrets coreinformers.SecretInformer, accounts coreinformers.ServiceAccountInformer, pods coreinformers.PodInformer, opts Options) (*Controller, error) {
	if client == nil || secrets == nil || accounts == nil || pods == nil {
		return nil, errors.New("legacytokencleaner: client and informers are required")
	}
	if opts.CleanUpPeriod < 0 {
		return nil, fmt.Errorf("legacytokencleaner: the clean-up period must be positive, got %s", opts.CleanUpPeriod)
	}
	c := &Controller{
		client: client, secrets: secrets.Lister(), accounts: accounts.Lister(), pods: pods.Lister(),
		synced: []cache.InformerSynced{secrets.Informer().HasSynced, accounts.Informer().HasSynced, pods.Informer().HasSynced},
		period: opts.CleanUpPeriod, now: opts.Now, log: opts.Logger,
	}
	if c.period == 0 {
		c.period = DefaultCleanUpPeriod
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c, nil
}

// Run looks at the token Secrets at once and then every SyncInterval until
// ctx ends. The pass is one loop over the cache: workers does not apply.
func (c *Controller) Run(ctx context.Context, _ int) {
	c.log.Info("starting", "controller", Name, "cleanUpPeriod", c.period)
	defer c.log.Info("stopped", "controller", Name)
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), c.synced...) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Sync(ctx); err != nil {
			c.log.Warn("legacy service account token clean-up", "controller", Name, "err", err)
		}
	}, SyncInterval)
}

// Sync is one pass over the token Secrets. An error says why the pass
// could not be made at all; failures with single Secrets are logged and
// the next pass tries them again.
func (c *Controller) Sync(ctx context.Context) error {
	now := c.now().UTC()
	since, err := c.trackedSince(ctx)
	if err != nil {
		return err
	}
	// A Secret without a last-used label may have been used on the
	// tracking's first day before tracking began: count from the day after.
	if now.Before(since.AddDate(0, 0, 1).Add(c.period)) {
		return nil // not tracked for a whole period yet
	}
	cutoff := now.Add(-c.period)
	cutoffDay := cutoff.Format(dateFormat) // dates sort as strings
	secrets, err := c.secrets.List(labels.Everything())
	if err != nil {
		return err
	}
	mounted := map[string]map[string]bool{} // namespace → Secret names its pods refer to
	for _, s := range secrets {
		if s.Type != corev1.SecretTypeServiceAccountToken || !s.CreationTimestamp.Time.Before(cutoff) || s.DeletionTimestamp != nil {
			continue
		}
		lastUsed, dated := s.Labels[lastUsedLabel]
		if dated {
			if _, err := time.Parse(dateFormat, lastUsed); err != nil {
				c.log.Warn("legacy token secret has a malformed last-used label", "controller", Name, "secret", s.Namespace+"/"+s.Name, "value", lastUsed)
				continue
			}
			if lastUsed >= cutoffDay {
				continue
			}
		}
		if !c.autoGenerated(s) {
			continue
		}
		names, ok := mounted[s.Namespace]
		if !ok {
			if names, err = c.podSecrets(s.Namespace); err != nil {
				return err
			}
			mounted[s.Namespace] = names
		}
		if names[s.Name] {
			continue // a pod still uses it
		}
		invalidSince := s.Labels[invalidSinceLabel]
		if _, err := time.Parse(dateFormat, invalidSince); err != nil {
			// Not marked, or marked with something that is no date.
			today := now.Format(dateFormat)
			c.log.Info("marking an unused auto-generated service account token invalid", "controller", Name, "secret", s.Namespace+"/"+s.Name, "lastUsed", lastUsed, "invalidSince", today)
			if err := c.markInvalid(ctx, s, today); err != nil {
				c.log.Warn("labelling a legacy token secret invalid", "controller", Name, "secret", s.Namespace+"/"+s.Name, "err", err)
			}
			continue
		}
		if invalidSince >= cutoffDay {
			continue
		}
		c.log.Info("deleting an auto-generated service account token invalid for the whole clean-up period", "controller", Name,
			"secret", s.Namespace+"/"+s.Name, "created", s.CreationTimestamp.Time, "lastUsed", lastUsed, "invalidSince", invalidSince)
		// Only the version judged: a Secret changed since (used, its
		// label removed) waits for the next pass.
		err := c.client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.Warn("deleting a legacy token secret", "controller", Name, "secret", s.Namespace+"/"+s.Name, "err", err)
		}
	}
	return nil
}

// trackedSince is the day the API servers began to date token use, from
// their ConfigMap, read from the API (not a cache) since it decides whether
// tokens are cleaned at all.
func (c *Controller) trackedSince(ctx context.Context) (time.Time, error) {
	cm, err := c.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, trackingConfigMap, metav1.GetOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading since when legacy token use is tracked: %w", err)
	}
	v, ok := cm.Data[trackingSinceKey]
	if !ok {
		return time.Time{}, fmt.Errorf("configmap %s/%s has no %q", metav1.NamespaceSystem, trackingConfigMap, trackingSinceKey)
	}
	since, err := time.Parse(dateFormat, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("configmap %s/%s: %s %q is not a date: %w", metav1.NamespaceSystem, trackingConfigMap, trackingSinceKey, v, err)
	}
	return since, nil
}

// autoGenerated reports whether s is the token of a service account that
// lists it in .secrets (of the uid s names, if it names one): what
// Kubernetes generated for accounts before 1.24. Only those are cleaned;
// a token Secret created by hand is its owner's to delete.
func (c *Controller) autoGenerated(s *corev1.Secret) bool {
	name := s.Annotations[corev1.ServiceAccountNameKey]
	if name == "" {
		return false
	}
	sa, err := c.accounts.ServiceAccounts(s.Namespace).Get(name)
	if err != nil {
		return false
	}
	if uid := types.UID(s.Annotations[corev1.ServiceAccountUIDKey]); uid != "" && uid != sa.UID {
		return false
	}
	for _, ref := range sa.Secrets {
		if ref.Name == s.Name {
			return true
		}
	}
	return false
}

// podSecrets are the Secrets the pods of namespace refer to.
func (c *Controller) podSecrets(namespace string) (map[string]bool, error) {
	pods, err := c.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
	}
	names := map[string]bool{}
	for _, p := range pods {
		podSecretNames(p, names)
	}
	return names, nil
}

// markInvalid labels s invalid since today with a merge patch naming its
// uid, so that a Secret recreated under the name is not marked.
func (c *Controller) markInvalid(ctx context.Context, s *corev1.Secret, today string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": s.UID, "labels": map[string]string{invalidSinceLabel: today},
	}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Secrets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
