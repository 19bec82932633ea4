package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/authn"
)

// GuardNode is a registry WriteGuard for nodes: the part of Kubernetes'
// NodeRestriction that authorization cannot do, because the name of a
// created Node is in the body. A node's credential may create or update
// only the Node of its own name; other users are not affected.
func GuardNode(ctx context.Context, obj runtime.Object) error {
	u, _ := authn.UserFrom(ctx)
	self, isNode := NodeName(u)
	if !isNode {
		return nil
	}
	n, ok := obj.(*corev1.Node)
	if !ok || n.Name == self {
		return nil
	}
	return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, n.Name,
		fmt.Errorf("node %q is not allowed to modify node %q", self, n.Name))
}
