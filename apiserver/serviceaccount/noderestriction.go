package serviceaccount

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/authz/node"
)

// restrictNode is the TokenRequest part of Kubernetes' NodeRestriction:
// the node authorizer lets a node ask for the tokens of the service
// accounts its pods run as, and this makes each such token one bound to a
// pod on that very node, so a node cannot mint long-lived or unbound
// credentials for an account. It runs before the request is looked at
// further, as admission does. Other users are not affected. For a node it
// returns the bound pod it read, so the request need not read it again.
func (t *Tokens) restrictNode(ctx context.Context, namespace, account string, spec *authenticationv1.TokenRequestSpec) (*corev1.Pod, error) {
	u, _ := authn.UserFrom(ctx)
	self, isNode := node.NodeName(u)
	if !isNode {
		return nil, nil
	}
	refuse := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, account, errors.New(msg))
	}
	r := spec.BoundObjectRef
	switch {
	case r == nil || r.Kind != "Pod" || r.APIVersion != "v1" || r.Name == "":
		return nil, refuse("node requested token not bound to a pod")
	case r.UID == "":
		return nil, refuse("node requested token with a pod binding without a uid")
	}
	pod := &corev1.Pod{}
	if err := t.load(ctx, "pods", namespace, r.Name, pod); err != nil {
		return nil, err
	}
	switch {
	case pod.UID != r.UID:
		return nil, refuse(fmt.Sprintf("the UID in the bound object reference (%s) does not match the UID in record; the object might have been deleted and then recreated", r.UID))
	case pod.Spec.NodeName != self:
		return nil, refuse("node requested token bound to a pod scheduled on a different node")
	}
	if err := t.restrictNodeAudience(ctx, u, namespace, account, pod, spec.Audiences); err != nil {
		return nil, refuse(err.Error())
	}
	return pod, nil
}

// VerbRequestAudience is the verb an authorizer is asked about when a node
// wants a token for an audience its pod does not use: the resource is the
// audience ("" for the API server's own), the name the service account,
// in the pod's namespace, as Kubernetes asks it.
const VerbRequestAudience = "request-serviceaccounts-token-audience"

// restrictNodeAudience is NodeRestriction's audience part (Kubernetes'
// ServiceAccountNodeAudienceRestriction, on by default since 1.33): a node
// holds the tokens of every pod it runs, so without this it could mint a
// pod's identity for any other system that trusts this issuer. It may ask
// for one audience, or none (the API server's), and only one the pod
// itself uses, unless the authorizer grants it more.
func (t *Tokens) restrictNodeAudience(ctx context.Context, u *authn.User, namespace, account string, pod *corev1.Pod, audiences []string) error {
	audience := ""
	switch len(audiences) {
	case 0:
	case 1:
		audience = audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	if podUsesAudience(pod, audience) {
		return nil
	}
	if t.authz != nil {
		// An authorizer that fails grants nothing: the node is refused
		// rather than let through.
		ok, _, err := t.authz.Authorize(ctx, authz.Attributes{User: u, Verb: VerbRequestAudience, APIVersion: "v1",
			Resource: audience, Namespace: namespace, Name: account, ResourceRequest: true})
		if err == nil && ok {
			return nil
		}
	}
	return fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, u.Name)
}

// podUsesAudience reports whether one of the pod's projected
// serviceAccountToken sources is for audience; "" is what the
// kube-api-access volume asks for. The names are compared as written, as
// Kubernetes does: the node agent asks with its volume's own audience.
// Kubernetes also accepts the audiences a CSIDriver's tokenRequests name
// for the pod's CSI volumes; skiff serves no CSIDriver objects, so no CSI
// driver can have tokens requested for it.
func podUsesAudience(pod *corev1.Pod, audience string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if sat := src.ServiceAccountToken; sat != nil && sat.Audience == audience {
				return true
			}
		}
	}
	return false
}
