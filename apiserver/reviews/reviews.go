package reviews

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1alpha1 "k8s.io/api/authentication/v1alpha1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/registry"
)

// RulesLister lists the rules that apply to a user in a namespace (the
// RBAC authorizer).
type RulesLister interface {
	RulesFor(user *authn.User, namespace string) []rbacv1.PolicyRule
}

// Config is what the reviews answer from.
type Config struct {
	Authorizer authz.Authorizer
	Rules      RulesLister
	Tokens     authn.TokenAuthenticator
	// APIAudiences are the API server's own: what a TokenReview that
	// names no audiences checks a token for.
	APIAudiences []string
}

const (
	authzGroup = "authorization.k8s.io"
	authnGroup = "authentication.k8s.io"
)

// Resources returns the registry entries of the review APIs.
func Resources(cfg Config) []*registry.Resource {
	create := []string{"create"}
	return []*registry.Resource{
		{Group: authzGroup, Version: "v1", Name: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Verbs: create,
			New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, Virtual: cfg.selfAccess},
		{Group: authzGroup, Version: "v1", Name: "selfsubjectrulesreviews", Kind: "SelfSubjectRulesReview", Verbs: create,
			New: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, Virtual: cfg.selfRules},
		{Group: authzGroup, Version: "v1", Name: "subjectaccessreviews", Kind: "SubjectAccessReview", Verbs: create,
			New: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, Virtual: cfg.subjectAccess},
		{Group: authzGroup, Version: "v1", Name: "localsubjectaccessreviews", Kind: "LocalSubjectAccessReview", Verbs: create, Namespaced: true,
			New: func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, Virtual: cfg.localSubjectAccess},
		{Group: authnGroup, Version: "v1", Name: "selfsubjectreviews", Kind: "SelfSubjectReview", Verbs: create,
			New: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, Virtual: selfSubject},
		// kubectl 1.27 asks v1beta1 or v1alpha1 for `auth whoami`.
		{Group: authnGroup, Version: "v1beta1", Name: "selfsubjectreviews", Kind: "SelfSubjectReview", Verbs: create,
			New: func() runtime.Object { return &authenticationv1beta1.SelfSubjectReview{} }, Virtual: selfSubject},
		{Group: authnGroup, Version: "v1alpha1", Name: "selfsubjectreviews", Kind: "SelfSubjectReview", Verbs: create,
			New: func() runtime.Object { return &authenticationv1alpha1.SelfSubjectReview{} }, Virtual: selfSubject},
		{Group: authnGroup, Version: "v1", Name: "tokenreviews", Kind: "TokenReview", Verbs: create,
			New: func() runtime.Object { return &authenticationv1.TokenReview{} }, Virtual: cfg.tokenReview},
	}
}

func requestUser(ctx context.Context) (*authn.User, error) {
	u, ok := authn.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user")
	}
	return u, nil
}

// attributes turns a review's spec into authorizer attributes.
func attributes(u *authn.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) (authz.Attributes, error) {
	switch {
	case ra != nil && nra != nil:
		return authz.Attributes{}, invalid(field.Invalid(field.NewPath("spec", "nonResourceAttributes"), "", "cannot be specified in combination with resourceAttributes"))
	case ra != nil:
		return authz.Attributes{User: u, ResourceRequest: true, Verb: ra.Verb, APIGroup: ra.Group, APIVersion: ra.Version,
			Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name}, nil
	case nra != nil:
		return authz.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}, nil
	}
	return authz.Attributes{}, invalid(field.Required(field.NewPath("spec", "resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
}

func invalid(errs ...*field.Error) error {
	return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs)
}

func (c Config) decide(ctx context.Context, a authz.Attributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	ok, reason, err := c.Authorizer.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: ok, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st, nil
}

func (c Config) selfAccess(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	u, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	a, err := attributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	if err != nil {
		return nil, err
	}
	if r.Status, err = c.decide(ctx, a); err != nil {
		return nil, err
	}
	return r, nil
}

func (c Config) subjectAccess(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authorizationv1.SubjectAccessReview)
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return nil, invalid(field.Required(field.NewPath("spec", "user"), "at least one of user or group must be specified"))
	}
	u := &authn.User{Name: r.Spec.User, UID: r.Spec.UID, Groups: r.Spec.Groups, Extra: extraFrom(r.Spec.Extra)}
	a, err := attributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes)
	if err != nil {
		return nil, err
	}
	if r.Status, err = c.decide(ctx, a); err != nil {
		return nil, err
	}
	return r, nil
}

func (c Config) localSubjectAccess(ctx context.Context, namespace string, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authorizationv1.LocalSubjectAccessReview)
	if r.Spec.ResourceAttributes == nil {
		return nil, invalid(field.Required(field.NewPath("spec", "resourceAttributes"), "resourceAttributes are required in a LocalSubjectAccessReview"))
	}
	if r.Spec.ResourceAttributes.Namespace != namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %s", namespace))
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return nil, invalid(field.Required(field.NewPath("spec", "user"), "at least one of user or group must be specified"))
	}
	u := &authn.User{Name: r.Spec.User, UID: r.Spec.UID, Groups: r.Spec.Groups, Extra: extraFrom(r.Spec.Extra)}
	a, err := attributes(u, r.Spec.ResourceAttributes, nil)
	if err != nil {
		return nil, err
	}
	if r.Status, err = c.decide(ctx, a); err != nil {
		return nil, err
	}
	r.Namespace = namespace
	return r, nil
}

func extraFrom(e map[string]authorizationv1.ExtraValue) map[string][]string {
	if len(e) == 0 {
		return nil
	}
	out := map[string][]string{}
	for k, v := range e {
		out[k] = v
	}
	return out
}

// selfRules lists what the user may do in a namespace, from RBAC. Users
// decided by another authorizer (system:masters) also hold RBAC's
// cluster-admin binding in the default policy, so the list is complete for
// them too.
func (c Config) selfRules(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authorizationv1.SelfSubjectRulesReview)
	u, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	if r.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	if c.Rules == nil {
		st.Incomplete = true
		st.EvaluationError = "no rules source"
	} else {
		for _, rule := range c.Rules.RulesFor(u, r.Spec.Namespace) {
			if len(rule.NonResourceURLs) > 0 {
				st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
				continue
			}
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups,
				Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
	}
	r.Status = st
	return r, nil
}

func userInfo(u *authn.User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}

// selfSubject answers `kubectl auth whoami` in whichever version was asked.
func selfSubject(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	u, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	info := userInfo(u)
	now := metav1.Now()
	switch r := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		r.Status.UserInfo = info
		r.CreationTimestamp = now
		return r, nil
	case *authenticationv1beta1.SelfSubjectReview:
		r.Status.UserInfo = info
		r.CreationTimestamp = now
		return r, nil
	case *authenticationv1alpha1.SelfSubjectReview:
		r.Status.UserInfo = info
		r.CreationTimestamp = now
		return r, nil
	}
	return nil, apierrors.NewInternalError(fmt.Errorf("unexpected %T", obj))
}

// tokenReview authenticates spec.token. An invalid token is a review with
// authenticated=false and the reason, not an error of the request.
func (c Config) tokenReview(ctx context.Context, _ string, obj runtime.Object) (runtime.Object, error) {
	r := obj.(*authenticationv1.TokenReview)
	if r.Spec.Token == "" {
		return nil, apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenReview").GroupKind(), "",
			field.ErrorList{field.Required(field.NewPath("spec", "token"), "token must be set")})
	}
	var u *authn.User
	var ok bool
	var err error
	auds := r.Spec.Audiences
	if len(auds) == 0 {
		auds = c.APIAudiences
	}
	if c.Tokens != nil {
		u, ok, err = c.Tokens.AuthenticateToken(authn.WithAudiences(ctx, auds), r.Spec.Token)
	}
	r.Spec.Token = "" // never echo a credential
	switch {
	case err != nil:
		r.Status = authenticationv1.TokenReviewStatus{Error: err.Error()}
	case !ok:
		r.Status = authenticationv1.TokenReviewStatus{Error: "unknown token"}
	default:
		// The audiences asked for that the token is good for, not all
		// of those asked for: a reviewer that names several must not
		// read one the token was not issued for.
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: userInfo(u), Audiences: u.Audiences}
	}
	return r, nil
}
