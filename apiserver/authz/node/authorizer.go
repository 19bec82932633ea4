package node

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
	"github.com/skiffkube/skiff/apiserver/authz/rbac"
)

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = "kube-node-lease"

// CredentialsPath is where a node renews its client certificate (see
// apiserver/nodejoin); a node may POST there, for its own name only.
const CredentialsPath = bootstrap.NodeCredentialsPath

// Authorizer decides node agents' requests; it has no opinion on anyone
// else's.
type Authorizer struct {
	graph *Graph
	rules []rbacv1.PolicyRule
	// current, when set, answers for a pod the graph does not relate to the
	// node: the graph follows the store's watch and may trail it by some
	// events under load, while the node learned of the pod from its own
	// watch and writes its status at once.
	current PodNodeReader
}

// PodNodeReader tells the node a pod is bound to from the current state
// ("" for no node or no pod).
type PodNodeReader interface {
	// PodNode returns the pod's node; want is the node asking, which lets
	// a reader answer from a cache when that allows.
	PodNode(ctx context.Context, namespace, name, want string) (string, error)
}

// NewAuthorizer returns a node authorizer over graph; current may be nil
// (the graph alone decides).
func NewAuthorizer(graph *Graph, current PodNodeReader) *Authorizer {
	return &Authorizer{graph: graph, rules: bootstrap.NodeRules(), current: current}
}

// NodeName returns the node a user is the agent of, if it is one.
func NodeName(u *authn.User) (string, bool) {
	if u == nil || !strings.HasPrefix(u.Name, bootstrap.NodeUserPrefix) {
		return "", false
	}
	for _, g := range u.Groups {
		if g == bootstrap.NodesGroup {
			name := strings.TrimPrefix(u.Name, bootstrap.NodeUserPrefix)
			return name, name != ""
		}
	}
	return "", false
}

// Authorize implements authz.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs authz.Attributes) (bool, string, error) {
	node, ok := NodeName(attrs.User)
	if !ok {
		return false, "", nil
	}
	if !attrs.ResourceRequest {
		// The credentials handler checks that the name is the node's own.
		return attrs.Path == CredentialsPath && attrs.Verb == "post", "", nil
	}
	req := rbac.Request{Verb: attrs.Verb, ResourceRequest: true, APIGroup: attrs.APIGroup,
		Resource: attrs.Resource, Subresource: attrs.Subresource, Name: attrs.Name}
	allowedKind := false
	for i := range a.rules {
		if rbac.RuleAllows(req, &a.rules[i]) {
			allowedKind = true
			break
		}
	}
	if !allowedKind {
		return false, "", nil
	}
	ok, why := a.related(node, attrs)
	if !ok && a.current != nil && attrs.APIGroup == "" && attrs.Resource == "pods" && attrs.Name != "" &&
		attrs.Verb != "list" && attrs.Verb != "watch" {
		// The graph may not have seen the binding yet: ask the store.
		bound, err := a.current.PodNode(ctx, attrs.Namespace, attrs.Name, node)
		if err != nil {
			return false, "", err
		}
		ok = bound == node
	}
	if !ok {
		return false, why, nil
	}
	return true, "", nil
}

// related checks that the object belongs to the node.
func (a *Authorizer) related(node string, attrs authz.Attributes) (bool, string) {
	noRelation := fmt.Sprintf("no relationship found between node '%s' and this object", node)
	group, res := attrs.APIGroup, attrs.Resource
	isList := attrs.Verb == "list" || attrs.Verb == "watch"
	switch {
	case group == "" && res == "nodes":
		switch {
		case attrs.Verb == "create":
			// The name is in the body, which authorization does not see.
			return true, ""
		case isList:
			return selects(attrs.FieldSelector, "metadata.name", node), "a node may list only itself (fieldSelector metadata.name=" + node + ")"
		}
		return attrs.Name == node, noRelation
	case group == "coordination.k8s.io" && res == "leases":
		if attrs.Namespace != LeaseNamespace {
			return false, noRelation
		}
		return attrs.Name == node || (attrs.Verb == "create" && attrs.Name == ""), noRelation
	case group == "" && res == "pods":
		if isList {
			return selects(attrs.FieldSelector, "spec.nodeName", node), "a node may list only its own pods (fieldSelector spec.nodeName=" + node + ")"
		}
		return attrs.Name != "" && a.graph.podNode(attrs.Namespace, attrs.Name) == node, noRelation
	case group == "" && (res == "secrets" || res == "configmaps" || res == "persistentvolumeclaims"):
		kind := map[string]refKind{"secrets": refSecret, "configmaps": refConfigMap, "persistentvolumeclaims": refPVC}[res]
		name := attrs.Name
		if isList {
			// kubelets watch one object at a time with metadata.name=<name>.
			name = exactly(attrs.FieldSelector, "metadata.name")
		}
		return name != "" && a.graph.references(node, ref{kind: kind, namespace: attrs.Namespace, name: name}), noRelation
	case group == "" && res == "persistentvolumes":
		// The volume behind a claim its pods use, as in Kubernetes; and a
		// local-path volume placed on the node (skiff's own relation, for
		// the agent's sweep of deleted volumes' directories). A volume
		// that does not exist is refused (403, not 404), as Kubernetes'
		// graph refuses what it has no vertex for.
		return attrs.Name != "" && !isList && (a.graph.usesVolume(node, attrs.Name) || a.graph.volumes.on(attrs.Name, node)), noRelation
	case group == "" && res == "serviceaccounts" && attrs.Subresource == "token":
		return a.graph.references(node, ref{kind: refServiceAccount, namespace: attrs.Namespace, name: attrs.Name}), noRelation
	}
	// Events, services, endpoints, reviews: not tied to one node.
	return true, ""
}

// selects reports whether a field selector requires field=value.
func selects(selector, field, value string) bool {
	return selector != "" && exactly(selector, field) == value
}

// exactly returns the value a field selector requires field to equal.
func exactly(selector, field string) string {
	s, err := fields.ParseSelector(selector)
	if err != nil {
		return ""
	}
	v, _ := s.RequiresExactMatch(field)
	return v
}
