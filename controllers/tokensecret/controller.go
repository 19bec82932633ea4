package tokensecret

import (
	"context"
	"fmt"
	"log/slog"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/runner"
)

// Name is the controller's name in logs, events and the manager.
const Name = "token-secret-controller"

// TokenTTL is the longest lifetime a TokenRequest may ask for; these tokens stand in for Kubernetes'
// non-expiring legacy ones and end with their Secret.
const TokenTTL = int64(1) << 32

// Options tune the controller.
type Options struct {
	Logger *slog.Logger
	// RootCA is stored as ca.crt; empty leaves ca.crt out.
	RootCA []byte
}

// Controller fills service account token Secrets.
type Controller struct {
	client   kubernetes.Interface
	secrets  corelisters.SecretLister
	accounts corelisters.ServiceAccountLister
	synced   []cache.InformerSynced
	queue    runner.Queue
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
		queue:  runner.NewQueue(Name), recorder: recorder, rootCA: opts.RootCA, log: opts.Logger,
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if _, err := secretInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueSecret, UpdateFunc: func(_, cur any) { c.enqueueSecret(cur) },
	}); err != nil {
		return nil, err
	}
	// A Secret may name an account that does not exist yet.
	if _, err := saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			sa, ok := obj.(*corev1.ServiceAccount)
			if !ok {
				return
			}
			secrets, err := c.secrets.Secrets(sa.Namespace).List(labels.Everything())
			if err != nil {
				return
			}
			for _, s := range secrets {
				if s.Annotations[corev1.ServiceAccountNameKey] == sa.Name {
					c.enqueueSecret(s)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run processes Secrets until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	runner.Run(ctx, Name, c.queue, workers, c.sync, c.log, c.synced...)
}

func (c *Controller) enqueueSecret(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Type != corev1.SecretTypeServiceAccountToken || len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
		return
	}
	if key, ok := runner.KeyOf(s); ok {
		c.queue.Add(key)
	}
}

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
	saName := secret.Annotations[corev1.ServiceAccountNameKey]
	if secret.Type != corev1.SecretTypeServiceAccountToken || saName == "" || len(secret.Data[corev1.ServiceAccountTokenKey]) > 0 ||
		secret.DeletionTimestamp != nil {
		return nil
	}
	sa, err := c.accounts.ServiceAccounts(ns).Get(saName)
	if apierrors.IsNotFound(err) {
		return nil // the account's arrival enqueues the Secret again
	}
	if err != nil {
		return err
	}
	if uid := secret.Annotations[corev1.ServiceAccountUIDKey]; uid != "" && uid != string(sa.UID) {
		return nil // meant for an earlier account of that name; Kubernetes leaves these unfilled too
	}
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
	out := secret.DeepCopy()
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	out.Data[corev1.ServiceAccountTokenKey] = []byte(tr.Status.Token)
	out.Data[corev1.ServiceAccountNamespaceKey] = []byte(ns)
	if len(c.rootCA) > 0 {
		out.Data[corev1.ServiceAccountRootCAKey] = c.rootCA
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	if _, err := c.client.CoreV1().Secrets(ns).Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("storing the token in secret %s: %w", key, err)
	}
	return nil
}
