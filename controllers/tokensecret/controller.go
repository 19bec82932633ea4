package tokensecret

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "token-secret-controller"

// TokenTTL is the longest lifetime a TokenRequest may ask for; these tokens stand in for Kubernetes'
// non-expiring legacy ones and end with their Secret, or when the Secret holds another (the API
// server takes a token of this lifetime bound to a token Secret as one issued for it to hold).
const TokenTTL = int64(1) << 32

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
	// RootCA is stored as ca.crt; empty leaves ca.crt out.
	RootCA []byte
}

// Controller fills service account token Secrets, deletes those whose account is gone, and takes
// deleted ones out of their account's secrets list.
type Controller struct {
	client   kubernetes.Interface
	secrets  corelisters.SecretLister
	accounts corelisters.ServiceAccountLister
	synced   []cache.InformerSynced
	queue    runner.Queue // token Secrets, "namespace/name"
	unref    runner.Queue // deleted token Secrets, unrefKey
	recorder record.EventRecorder
	rootCA   []byte
	log      *slog.Logger
}

// New wires the controller to the informers.
func New(client kubernetes.Interface, secretInformer coreinformers.SecretInformer, saInformer coreinformers.ServiceAccountInformer, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if client == nil || secretInformer == nil || saInformer == nil || recorder == nil {
		return nil, fmt.Errorf("tokensecret: client, informers and recorder are required")
	}
	c := &Controller{
		client: client, secrets: secretInformer.Lister(), accounts: saInformer.Lister(),
		synced: []cache.InformerSynced{secretInformer.Informer().HasSynced, saInformer.Informer().HasSynced},
		queue:  runner.NewQueue(Name), unref: runner.NewQueue(Name + "-references"),
		recorder: recorder, rootCA: opts.RootCA, log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := secretInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueSecret, UpdateFunc: func(_, cur any) { c.enqueueSecret(cur) }, DeleteFunc: c.secretDeleted,
	}); err != nil {
		return nil, err
	}
	// An account's arrival or departure decides its Secrets' fate: filled, or deleted with it.
	if _, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueAccountSecrets, DeleteFunc: c.enqueueAccountSecrets,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Secrets until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Go(func() { runner.Run(ctx, Name+"-references", c.unref, workers, c.syncUnref, c.log, c.synced...) })
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
	wg.Wait()
}

func isTokenSecret(s *corev1.Secret) bool {
	return s.Type == corev1.SecretTypeServiceAccountToken && s.Annotations[corev1.ServiceAccountNameKey] != ""
}

func (c *Controller) enqueueSecret(obj any) {
	if s, ok := obj.(*corev1.Secret); ok && isTokenSecret(s) {
		if key, ok := runner.KeyOf(s); ok {
			c.queue.Add(key)
		}
	}
}

func (c *Controller) enqueueAccountSecrets(obj any) {
	sa, ok := runner.Object[*corev1.ServiceAccount](obj)
	if !ok {
		return
	}
	secrets, err := c.secrets.Secrets(sa.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range secrets {
		if isTokenSecret(s) && s.Annotations[corev1.ServiceAccountNameKey] == sa.Name {
			c.enqueueSecret(s)
		}
	}
}

// An unrefKey names a deleted token Secret and the account it was for:
// "namespace/account/account-uid/secret" (the uid may be empty).
func unrefKey(s *corev1.Secret) string {
	return strings.Join([]string{s.Namespace, s.Annotations[corev1.ServiceAccountNameKey], s.Annotations[corev1.ServiceAccountUIDKey], s.Name}, "/")
}

func (c *Controller) secretDeleted(obj any) {
	if s, ok := runner.Object[*corev1.Secret](obj); ok && isTokenSecret(s) {
		c.unref.Add(unrefKey(s))
	}
}

// account returns the ServiceAccount a token Secret is for: the one named, and the one of that uid
// when the Secret records one. A miss in the cache is checked with a live read, since a Secret may
// arrive before the account it names. nil means there is no such account.
func (c *Controller) account(ctx context.Context, ns, name string, uid types.UID) (*corev1.ServiceAccount, error) {
	sa, err := c.accounts.ServiceAccounts(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil && (uid == "" || sa.UID == uid) {
		return sa, nil
	}
	sa, err = c.client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading service account %s/%s: %w", ns, name, err)
	}
	if uid != "" && sa.UID != uid {
		return nil, nil
	}
	return sa, nil
}

// sync brings one token Secret in line with Kubernetes' token controller: deleted when the account
// it names (of the uid it records) does not exist, otherwise given a token, the namespace and the
// cluster CA where these are missing or, for the CA, differ.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	secret, err := c.secrets.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isTokenSecret(secret) {
		return nil
	}
	saName := secret.Annotations[corev1.ServiceAccountNameKey]
	sa, err := c.account(ctx, ns, saName, types.UID(secret.Annotations[corev1.ServiceAccountUIDKey]))
	if err != nil {
		return err
	}
	if sa == nil {
		return c.deleteSecret(ctx, secret)
	}
	needsCA := len(c.rootCA) > 0 && !bytes.Equal(secret.Data[corev1.ServiceAccountRootCAKey], c.rootCA)
	needsNamespace := len(secret.Data[corev1.ServiceAccountNamespaceKey]) == 0
	needsToken := len(secret.Data[corev1.ServiceAccountTokenKey]) == 0
	if !needsCA && !needsNamespace && !needsToken || secret.DeletionTimestamp != nil {
		return nil
	}
	out := secret.DeepCopy()
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	if needsToken {
		ttl := TokenTTL
		tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, saName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: &ttl,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
			},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // the Secret or the account is gone or was replaced; its events bring it back
		}
		if err != nil {
			return fmt.Errorf("requesting a token for %s/%s: %w", ns, saName, err)
		}
		out.Data[corev1.ServiceAccountTokenKey] = []byte(tr.Status.Token)
	}
	if needsNamespace {
		out.Data[corev1.ServiceAccountNamespaceKey] = []byte(ns)
	}
	if needsCA {
		out.Data[corev1.ServiceAccountRootCAKey] = c.rootCA
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	_, err = c.client.CoreV1().Secrets(ns).Update(ctx, out, metav1.UpdateOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return nil // changed since the cache saw it; that update enqueues the Secret again
	default:
		return fmt.Errorf("storing the token in secret %s: %w", key, err)
	}
}

// deleteSecret removes a token Secret whose account is gone: only that Secret (uid precondition),
// so one re-created meanwhile under its name is judged on its own.
func (c *Controller) deleteSecret(ctx context.Context, s *corev1.Secret) error {
	uid := s.UID
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, opts)
	switch {
	case err == nil:
		c.log.Info("deleted token secret of a missing service account", "secret", s.Namespace+"/"+s.Name,
			"serviceAccount", s.Annotations[corev1.ServiceAccountNameKey])
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	default:
		return fmt.Errorf("deleting token secret %s/%s of a missing service account: %w", s.Namespace, s.Name, err)
	}
}

// syncUnref takes a deleted token Secret out of its account's secrets list, when the account is
// still the one the Secret was for.
func (c *Controller) syncUnref(ctx context.Context, key string) error {
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		return nil
	}
	ns, saName, uid, secretName := parts[0], parts[1], types.UID(parts[2]), parts[3]
	if sa, err := c.accounts.ServiceAccounts(ns).Get(saName); err != nil || (uid != "" && sa.UID != uid) {
		return nil // the account went too, or is another one now
	}
	accounts := c.client.CoreV1().ServiceAccounts(ns)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		sa, err := accounts.Get(ctx, saName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if uid != "" && sa.UID != uid {
			return nil
		}
		kept := slices.DeleteFunc(slices.Clone(sa.Secrets), func(r corev1.ObjectReference) bool { return r.Name == secretName })
		if len(kept) == len(sa.Secrets) {
			return nil
		}
		sa.Secrets = kept
		_, err = accounts.Update(ctx, sa, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing secret %s from service account %s/%s: %w", secretName, ns, saName, err)
	}
	return nil
}
