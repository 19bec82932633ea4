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
	"github.com/skiffkube/skiff/apiserver/authz/node"
)

// restrictNode is the TokenRequest part of Kubernetes' NodeRestriction:
// the node authorizer lets a node ask for the tokens of the service
// accounts its pods run as, and this makes each such token one bound to a
// pod on that very node, so a node cannot mint long-lived or unbound
// credentials for an account. It runs before the request is looked at
// further, as admission does. Other users are not affected. For a node it
// returns the bound pod it read, so the request need not read it again.
func (t *Tokens) restrictNode(ctx context.Context, namespace, account string, r *authenticationv1.BoundObjectReference) (*corev1.Pod, error) {
	u, _ := authn.UserFrom(ctx)
	self, isNode := node.NodeName(u)
	if !isNode {
		return nil, nil
	}
	refuse := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, account, errors.New(msg))
	}
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
	return pod, nil
}
