package manager

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/skiffkube/skiff/controllers/cronjob"
	"github.com/skiffkube/skiff/controllers/daemonset"
	"github.com/skiffkube/skiff/controllers/deployment"
	"github.com/skiffkube/skiff/controllers/disruption"
	"github.com/skiffkube/skiff/controllers/endpoints"
	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/garbagecollector"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/localpath"
	"github.com/skiffkube/skiff/controllers/namespace"
	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
	"github.com/skiffkube/skiff/controllers/persistentvolume"
	"github.com/skiffkube/skiff/controllers/podgc"
	"github.com/skiffkube/skiff/controllers/replicaset"
	"github.com/skiffkube/skiff/controllers/replication"
	"github.com/skiffkube/skiff/controllers/resourcequota"
	"github.com/skiffkube/skiff/controllers/rootcacert"
	"github.com/skiffkube/skiff/controllers/serviceaccount"
	"github.com/skiffkube/skiff/controllers/statefulset"
	"github.com/skiffkube/skiff/controllers/volumeprotection"
)

// ControllerNamespace holds the controllers' service accounts.
const ControllerNamespace = "kube-system"

// ServiceAccounts names the kube-system ServiceAccount each controller acts
// as when Options.ControllerCredentials is set; the API server's default
// policy binds each to system:controller:<account>. The names are
// Kubernetes' (both node loops are its node-controller). A controller not
// listed (the token Secret controller, which mints tokens, as in
// Kubernetes) uses the manager's own client.
var ServiceAccounts = map[string]string{
	cronjob.Name:                "cronjob-controller",
	daemonset.Name:              "daemon-set-controller",
	deployment.Name:             "deployment-controller",
	disruption.Name:             "disruption-controller",
	endpoints.Name:              "endpoint-controller",
	endpointslice.Name:          "endpointslice-controller",
	endpointslicemirroring.Name: "endpointslicemirroring-controller",
	garbagecollector.Name:       "generic-garbage-collector",
	job.Name:                    "job-controller",
	namespace.Name:              "namespace-controller",
	nodeipam.Name:               "node-controller",
	nodelifecycle.Name:          "node-controller",
	podgc.Name:                  "pod-garbage-collector",
	replicaset.Name:             "replicaset-controller",
	replication.Name:            "replication-controller",
	resourcequota.Name:          "resourcequota-controller",
	rootcacert.Name:             "root-ca-cert-publisher",
	serviceaccount.Name:         "service-account-controller",
	statefulset.Name:            "statefulset-controller",
	persistentvolume.Name:       "persistent-volume-binder",
	localpath.Name:              "local-path-provisioner",
	volumeprotection.Name:       "volume-protection-controller",
	legacytokencleaner.Name:     "legacy-service-account-token-cleaner",
}

// controllerTokenLifetime is how long a controller's token is asked for;
// it is replaced at 80% of that, and at once after a 401.
const controllerTokenLifetime = time.Hour

// ServiceAccountCredentials is what kube-controller-manager's
// --use-service-account-credentials does: the returned function gives the
// rest.Config of kube-system/<account>, which authenticates with tokens
// from the TokenRequest API. root (the manager's own identity) creates the
// ServiceAccount when it is missing and asks for the tokens; base supplies
// the server, its CA and rate limits, never its credentials.
func ServiceAccountCredentials(root kubernetes.Interface, base *rest.Config) func(account string) (*rest.Config, error) {
	return func(account string) (*rest.Config, error) {
		rc := rest.AnonymousClientConfig(base)
		rc.QPS, rc.Burst = base.QPS, base.Burst
		rc.UserAgent = base.UserAgent
		if rc.UserAgent != "" {
			rc.UserAgent += "/" + account
		}
		src := transport.NewCachedTokenSource(&tokenSource{root: root, account: account})
		rc.Wrap(transport.ResettableTokenSourceWrapTransport(src))
		return rc, nil
	}
}

// tokenSource asks for a new token of one service account.
type tokenSource struct {
	root    kubernetes.Interface
	account string
}

func (s *tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sas := s.root.CoreV1().ServiceAccounts(ControllerNamespace)
	if _, err := sas.Get(ctx, s.account, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.account, Namespace: ControllerNamespace}}
		if _, err := sas.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating service account %s/%s: %w", ControllerNamespace, s.account, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("reading service account %s/%s: %w", ControllerNamespace, s.account, err)
	}
	seconds := int64(controllerTokenLifetime / time.Second)
	start := time.Now()
	tr, err := sas.CreateToken(ctx, s.account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for %s/%s: %w", ControllerNamespace, s.account, err)
	}
	lifetime := tr.Status.ExpirationTimestamp.Sub(start)
	if lifetime <= 0 {
		lifetime = controllerTokenLifetime
	}
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: start.Add(lifetime * 8 / 10)}, nil
}
