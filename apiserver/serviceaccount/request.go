package serviceaccount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// Token lifetimes a TokenRequest may ask for, as Kubernetes bounds them.
const (
	DefaultTTL = time.Hour
	MinTTL     = 10 * time.Minute
	MaxTTL     = (1 << 32) * time.Second
	// ExtendedTTL is Kubernetes' ExpirationExtensionSeconds: how long the
	// token of a kube-api-access volume (admission.TokenExpirationSeconds)
	// is really valid.
	ExtendedTTL = 365 * 24 * time.Hour
)

var tokenRequestGK = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}

// TokenRequestAction is the serviceaccounts/token subresource.
func (t *Tokens) TokenRequestAction() *registry.Action {
	return &registry.Action{
		GVK:    authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
		New:    func() runtime.Object { return &authenticationv1.TokenRequest{} },
		Create: t.createToken,
	}
}

func (t *Tokens) createToken(ctx context.Context, namespace, name string, obj runtime.Object) (runtime.Object, error) {
	tr, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a TokenRequest, got %T", obj))
	}
	nodesPod, err := t.restrictNode(ctx, namespace, name, &tr.Spec)
	if err != nil {
		return nil, err
	}
	// As Kubernetes' TokenREST.Create: a name or namespace in the body must
	// be the URL's (the handler has already refused another namespace).
	meta := field.NewPath("metadata")
	if tr.Name != "" && tr.Name != name {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(meta.Child("name"), tr.Name, "must match the service account name if specified")})
	}
	if tr.Namespace != "" && tr.Namespace != namespace {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(meta.Child("namespace"), tr.Namespace, "must match the service account namespace if specified")})
	}
	sa := &corev1.ServiceAccount{}
	if err := t.load(ctx, "serviceaccounts", namespace, name, sa); err != nil {
		return nil, err
	}
	// The bounds are checked on the seconds asked for: a Duration of
	// more than 292 years wraps around, and could wrap into them.
	secs := int64(DefaultTTL / time.Second)
	if tr.Spec.ExpirationSeconds != nil {
		secs = *tr.Spec.ExpirationSeconds
	}
	ttl := time.Duration(secs) * time.Second
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch {
	case secs < int64(MinTTL/time.Second):
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), secs, "may not specify a duration less than 10 minutes"))
	case secs > int64(MaxTTL/time.Second):
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), secs, "may not specify a duration larger than 2^32 seconds"))
	}
	b := Binding{ServiceAccount: sa, Audiences: tr.Spec.Audiences, TTL: ttl}
	if r := tr.Spec.BoundObjectRef; r != nil {
		refPath := spec.Child("boundObjectRef")
		if r.Name == "" {
			errs = append(errs, field.Required(refPath.Child("name"), ""))
		}
		if len(errs) == 0 {
			// As Kubernetes, the kind is looked up in the reference's group,
			// whatever its version: a Pod of apps/v1 is not a pod.
			gvk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
			if gvk.Group != "" || (gvk.Kind != "Pod" && gvk.Kind != "Secret" && gvk.Kind != "Node") {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
			}
			switch r.Kind {
			case "Pod":
				if b.Pod = nodesPod; b.Pod == nil {
					b.Pod = &corev1.Pod{}
					if err := t.load(ctx, "pods", namespace, r.Name, b.Pod); err != nil {
						return nil, err
					}
				}
				if err := sameUID("pods", r, b.Pod.UID); err != nil {
					return nil, err
				}
				// A pod's token is its own account's: binding another
				// account's token to it would lend that account the pod.
				if b.Pod.Spec.ServiceAccountName != name {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
				}
				// The pod's node goes into the token too, as Kubernetes
				// does since 1.30; of a node already gone, only its name.
				if n := b.Pod.Spec.NodeName; n != "" {
					node := &corev1.Node{}
					if err := t.load(ctx, "nodes", "", n, node); err == nil {
						b.Node = node
					} else if apierrors.IsNotFound(err) {
						b.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
					} else {
						return nil, err
					}
				}
			case "Secret":
				b.Secret = &corev1.Secret{}
				if err := t.load(ctx, "secrets", namespace, r.Name, b.Secret); err != nil {
					return nil, err
				}
				if err := sameUID("secrets", r, b.Secret.UID); err != nil {
					return nil, err
				}
			case "Node":
				// Bound to the Node itself (Kubernetes'
				// ServiceAccountTokenNodeBinding): the token lives as
				// long as that node, whatever runs on it.
				b.Node = &corev1.Node{}
				if err := t.load(ctx, "nodes", "", r.Name, b.Node); err != nil {
					return nil, err
				}
				if err := sameUID("nodes", r, b.Node.UID); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, errs)
	}
	// The token of a kube-api-access volume (3607 s, bound to a pod, for
	// the API server) is valid for a year but says when it should have been
	// replaced, as Kubernetes' --service-account-extend-token-expiration
	// (on by default): in-cluster clients that read the file only once
	// keep working, and the status still asks the agent to renew in time.
	if b.Pod != nil && int64(ttl/time.Second) == admission.TokenExpirationSeconds && subset(tr.Spec.Audiences, t.audiences) {
		b.TTL, b.WarnAfter = ExtendedTTL, ttl
	}
	tok, exp, err := t.Issue(b)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	exp = exp.Add(ttl - b.TTL)
	tr.Spec.ExpirationSeconds = &secs
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = t.audiences
	}
	tr.Name, tr.Namespace = name, namespace
	tr.CreationTimestamp = metav1.NewTime(t.now().UTC().Truncate(time.Second))
	tr.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(exp)}
	return tr, nil
}

// sameUID checks that a bound object reference with a UID names the object
// of that name that exists now, not one deleted since.
func sameUID(resource string, r *authenticationv1.BoundObjectReference, stored types.UID) error {
	if r.UID == "" || r.UID == stored {
		return nil
	}
	return apierrors.NewConflict(schema.GroupResource{Resource: resource}, r.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record (%s); the object might have been deleted and then recreated", r.UID, stored))
}

// subset reports whether every audience asked for is one of allowed; none
// asked for means the API server's own.
func subset(asked, allowed []string) bool {
	for _, a := range asked {
		if !slices.Contains(allowed, a) {
			return false
		}
	}
	return true
}

// load reads one object (namespace "" for a cluster-scoped one),
// answering NotFound as the API would.
func (t *Tokens) load(ctx context.Context, resource, namespace, name string, into any) error {
	key := "/registry/" + resource + "/"
	if namespace != "" {
		key += namespace + "/"
	}
	kv, err := t.store.Get(ctx, key+name, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if err := json.Unmarshal(kv.Value, into); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}
