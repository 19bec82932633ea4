package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known identities of skiff's own components. Their client
// certificates carry these names (CN) and groups (O).
const (
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
	// KubeProxyUser is kube-proxy's user, as Kubernetes binds it to
	// system:node-proxier.
	KubeProxyUser        = "system:kube-proxy"
	NodesGroup           = "system:nodes"
	NodeUserPrefix       = "system:node:"
	AuthenticatedGroup   = "system:authenticated"
	UnauthenticatedGroup = "system:unauthenticated"
	MastersGroup         = "system:masters"
	// BootstrappersGroup and AgentJoinUser are the identity of skiff
	// server's --agent-token, as Kubernetes' bootstrap tokens authenticate
	// as system:bootstrap:<token id> in group system:bootstrappers
	// (k8s.io/cluster-bootstrap/token/api BootstrapUserPrefix,
	// BootstrapDefaultGroup).
	BootstrappersGroup = "system:bootstrappers"
	AgentJoinUser      = "system:bootstrap:skiff-agent"
)

// NodeCredentialsPath is where node agents obtain their certificates
// (apiserver/nodejoin; authz/node.CredentialsPath).
const NodeCredentialsPath = "/skiff/v1/nodecredentials"

// ControllerManagerLease is the Lease (kube-system) the controller manager
// is elected with, the only one its identity may update.
const ControllerManagerLease = "skiff-controller-manager"

// Aggregation labels: a ClusterRole carrying one has its rules folded into
// admin, edit or view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

const (
	legacyGroup = ""
	appsGroup   = "apps"
	batchGroup  = "batch"
	rbacGroup   = "rbac.authorization.k8s.io"
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
	allVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)

// rule builds a resource rule: verbs on resources of groups.
func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func groups(g ...string) []string { return g }
func verbs(v ...string) []string  { return v }
func nonResource(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	l := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	for k, v := range labels {
		l[k] = v
	}
	return rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l,
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
		Rules: rules,
	}
}

func aggregated(name string, labels map[string]string, selectLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectLabel: "true"}},
	}}
	return r
}

// ClusterRoles is the default set of cluster roles.
func ClusterRoles() []rbacv1.ClusterRole {
	return append([]rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rule(verbs("*"), groups("*"), "*"),
			nonResource(verbs("*"), "*")),

		// The user-facing roles are filled by aggregation; the
		// system:aggregate-to-* roles carry the actual rules, so that a
		// CRD's author can extend them with one labelled ClusterRole.
		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregated("view", map[string]string{AggregateToEdit: "true"}, AggregateToView),

		clusterRole("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"},
			rule(allVerbs, groups(rbacGroup), "roles", "rolebindings"),
			rule(verbs("create"), groups("authorization.k8s.io"), "localsubjectaccessreviews")),
		clusterRole("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"},
			rule(verbs("impersonate"), groups(legacyGroup), "serviceaccounts"),
			rule(writeVerbs, groups(legacyGroup), "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
			rule(verbs("create"), groups(legacyGroup), "pods/eviction"),
			rule(writeVerbs, groups(legacyGroup), "configmaps", "events", "persistentvolumeclaims",
				"replicationcontrollers", "replicationcontrollers/scale", "secrets", "serviceaccounts",
				"services", "services/proxy", "endpoints"),
			rule(verbs("create"), groups(legacyGroup), "serviceaccounts/token"),
			rule(writeVerbs, groups(appsGroup), "daemonsets", "deployments", "deployments/rollback", "deployments/scale",
				"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"),
			rule(writeVerbs, groups("autoscaling"), "horizontalpodautoscalers"),
			rule(writeVerbs, groups(batchGroup), "cronjobs", "jobs"),
			rule(writeVerbs, groups("networking.k8s.io"), "ingresses", "networkpolicies"),
			rule(writeVerbs, groups("policy"), "poddisruptionbudgets"),
			rule(writeVerbs, groups("discovery.k8s.io"), "endpointslices"),
			rule(readVerbs, groups(legacyGroup), "secrets", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
				"services/proxy", "serviceaccounts")),
		clusterRole("system:aggregate-to-view", map[string]string{AggregateToView: "true"},
			rule(readVerbs, groups(legacyGroup), "pods", "pods/log", "pods/status", "configmaps", "endpoints",
				"persistentvolumeclaims", "persistentvolumeclaims/status", "replicationcontrollers",
				"replicationcontrollers/scale", "replicationcontrollers/status", "serviceaccounts", "services",
				"services/status", "bindings", "events", "limitranges", "namespaces", "namespaces/status",
				"resourcequotas", "resourcequotas/status"),
			rule(readVerbs, groups(appsGroup), "controllerrevisions", "daemonsets", "daemonsets/status",
				"deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
				"replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"),
			rule(readVerbs, groups("autoscaling"), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(readVerbs, groups(batchGroup), "cronjobs", "cronjobs/status", "jobs", "jobs/status"),
			rule(readVerbs, groups("networking.k8s.io"), "ingresses", "ingresses/status", "networkpolicies"),
			rule(readVerbs, groups("policy"), "poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(readVerbs, groups("discovery.k8s.io"), "endpointslices")),

		clusterRole("system:basic-user", nil,
			rule(verbs("create"), groups("authorization.k8s.io"), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule(verbs("create"), groups("authentication.k8s.io"), "selfsubjectreviews")),
		clusterRole("system:discovery", nil,
			nonResource(verbs("get"), "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
				"/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:public-info-viewer", nil,
			nonResource(verbs("get"), "/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:monitoring", nil,
			nonResource(verbs("get"), "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/readyz", "/readyz/*")),

		clusterRole("system:node", nil, NodeRules()...),

		// Roles Kubernetes ships for add-ons to bind to: whoever checks
		// tokens and access on the API server's behalf (Vault's
		// Kubernetes auth, kube-rbac-proxy, extension API servers),
		// kube-proxy (bound to its user below), the cluster DNS (bound to
		// kube-system/kube-dns below), full access to the node API, the
		// node problem detector, heapster and the aggregator.
		clusterRole("system:auth-delegator", nil,
			rule(verbs("create"), groups("authentication.k8s.io"), "tokenreviews"),
			rule(verbs("create"), groups("authorization.k8s.io"), "subjectaccessreviews")),
		clusterRole("system:node-proxier", nil,
			rule(verbs("list", "watch"), groups(legacyGroup), "services", "endpoints"),
			rule(readVerbs, groups(legacyGroup), "nodes"),
			eventsRule(),
			rule(verbs("list", "watch"), groups("discovery.k8s.io"), "endpointslices")),
		clusterRole("system:kube-dns", nil,
			rule(verbs("list", "watch"), groups(legacyGroup), "endpoints", "services")),
		clusterRole("system:kubelet-api-admin", nil,
			rule(readVerbs, groups(legacyGroup), "nodes"),
			rule(verbs("proxy"), groups(legacyGroup), "nodes"),
			rule(verbs("*"), groups(legacyGroup), "nodes/proxy", "nodes/metrics", "nodes/spec", "nodes/stats", "nodes/log")),
		clusterRole("system:node-problem-detector", nil,
			rule(verbs("get"), groups(legacyGroup), "nodes"),
			rule(verbs("patch"), groups(legacyGroup), "nodes/status"),
			eventsRule()),
		clusterRole("system:heapster", nil,
			rule(readVerbs, groups(legacyGroup), "events", "pods", "nodes", "namespaces"),
			rule(readVerbs, groups("extensions"), "deployments")),
		// Service account issuer discovery (bound to every service
		// account below, as in Kubernetes).
		clusterRole("system:service-account-issuer-discovery", nil,
			nonResource(verbs("get"), "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/")),
		clusterRole("system:kube-aggregator", nil,
			rule(readVerbs, groups(legacyGroup), "services", "endpoints")),
		// What a joining agent may do: ask for a node client certificate.
		// Kubernetes' role of this name allows create, get, list and watch
		// on certificatesigningrequests, through which a kubelet obtains
		// its certificate; skiff serves no CSR API, and its agents get the
		// certificate from one POST instead (apiserver/nodejoin, which
		// issues bootstrappers client certificates only, never serving
		// ones).
		clusterRole("system:node-bootstrapper", nil,
			nonResource(verbs("post"), NodeCredentialsPath)),

		clusterRole("system:kube-scheduler", nil,
			rule(verbs("create", "patch", "update"), groups(legacyGroup, "events.k8s.io"), "events"),
			rule(verbs("create"), groups("coordination.k8s.io"), "leases"),
			rule(verbs("get", "update"), groups("coordination.k8s.io"), "leases"),
			rule(readVerbs, groups(legacyGroup), "nodes", "namespaces", "services", "replicationcontrollers",
				"persistentvolumeclaims", "persistentvolumes"),
			rule(verbs("get", "list", "watch", "delete"), groups(legacyGroup), "pods"),
			rule(verbs("create"), groups(legacyGroup), "bindings", "pods/binding"),
			rule(verbs("patch", "update"), groups(legacyGroup), "pods/status"),
			rule(readVerbs, groups(appsGroup), "replicasets", "statefulsets"),
			rule(readVerbs, groups("policy"), "poddisruptionbudgets"),
			rule(readVerbs, groups("storage.k8s.io"), "storageclasses", "csinodes", "csidrivers", "csistoragecapacities"),
			rule(readVerbs, groups("scheduling.k8s.io"), "priorityclasses"),
			rule(verbs("create"), groups("authentication.k8s.io"), "tokenreviews"),
			rule(verbs("create"), groups("authorization.k8s.io"), "subjectaccessreviews")),

		// Dynamic provisioning and delayed binding, as Kubernetes'
		// bootstrap policy: the scheduler annotates claims with the node
		// it picked (system:volume-scheduler); a provisioner creates and
		// deletes volumes for claims.
		clusterRole("system:volume-scheduler", nil,
			rule(verbs("get", "list", "watch", "patch", "update"), groups(legacyGroup), "persistentvolumes"),
			rule(readVerbs, groups("storage.k8s.io"), "storageclasses"),
			rule(verbs("get", "list", "watch", "patch", "update"), groups(legacyGroup), "persistentvolumeclaims")),
		clusterRole("system:persistent-volume-provisioner", nil,
			rule(verbs("get", "list", "watch", "create", "delete"), groups(legacyGroup), "persistentvolumes"),
			rule(verbs("get", "list", "watch", "update"), groups(legacyGroup), "persistentvolumeclaims"),
			rule(readVerbs, groups("storage.k8s.io"), "storageclasses"),
			rule(verbs("watch", "create", "update", "patch"), groups(legacyGroup), "events")),

		// The controller manager's own identity, as Kubernetes'
		// system:kube-controller-manager: its shared informers list and
		// watch everything, it holds the leader Lease, records Events, and
		// creates the controllers' service accounts and their tokens; the
		// token Secret controller runs as it. Each other controller acts
		// as its own kube-system service account (system:controller:*).
		clusterRole("system:kube-controller-manager", nil,
			eventsRule(),
			rule(verbs("create"), groups("coordination.k8s.io"), "leases"),
			rbacv1.PolicyRule{Verbs: verbs("get", "update"), APIGroups: groups("coordination.k8s.io"), Resources: []string{"leases"},
				ResourceNames: []string{ControllerManagerLease}},
			rule(verbs("create"), groups(legacyGroup), "secrets", "serviceaccounts"),
			rule(verbs("delete"), groups(legacyGroup), "secrets"),
			rule(verbs("get"), groups(legacyGroup), "configmaps", "namespaces", "secrets", "serviceaccounts"),
			rule(verbs("update"), groups(legacyGroup), "secrets", "serviceaccounts"),
			rule(verbs("create"), groups(legacyGroup), "serviceaccounts/token"),
			rule(verbs("create"), groups("authentication.k8s.io"), "tokenreviews"),
			rule(verbs("create"), groups("authorization.k8s.io"), "subjectaccessreviews"),
			rule(verbs("list", "watch"), groups("*"), "*")),
	}, controllerClusterRoles()...)
}

func clusterRoleBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: role},
		Subjects: subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
}

// ClusterRoleBindings is the default set of cluster role bindings. As in
// Kubernetes, system:node is not bound to anyone: the node authorizer
// grants nodes what the role lists, for their own objects only.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return append([]rbacv1.ClusterRoleBinding{
		clusterRoleBinding("cluster-admin", "cluster-admin", group(MastersGroup)),
		clusterRoleBinding("system:basic-user", "system:basic-user", group(AuthenticatedGroup)),
		clusterRoleBinding("system:discovery", "system:discovery", group(AuthenticatedGroup)),
		clusterRoleBinding("system:public-info-viewer", "system:public-info-viewer",
			group(AuthenticatedGroup), group(UnauthenticatedGroup)),
		clusterRoleBinding("system:monitoring", "system:monitoring", group("system:monitoring")),
		clusterRoleBinding("system:node-proxier", "system:node-proxier", user(KubeProxyUser)),
		clusterRoleBinding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery",
			group("system:serviceaccounts")),
		clusterRoleBinding("system:kube-dns", "system:kube-dns",
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kube-dns", Namespace: "kube-system"}),
		clusterRoleBinding("system:kube-scheduler", "system:kube-scheduler", user(SchedulerUser)),
		clusterRoleBinding("system:volume-scheduler", "system:volume-scheduler", user(SchedulerUser)),
		clusterRoleBinding("system:kube-controller-manager", "system:kube-controller-manager", user(ControllerManagerUser)),
		// Kubernetes binds system:node-bootstrapper to no one by default;
		// kubeadm binds its bootstrap tokens' group to it. skiff's agent
		// token is always there, so its binding is a default too.
		clusterRoleBinding("skiff:node-bootstrapper", "system:node-bootstrapper", group(BootstrappersGroup)),
	}, controllerClusterRoleBindings()...)
}

// NodeRules are what a node agent may do, by kind: the system:node role.
// The node authorizer grants them to each node for its own objects only
// (its Node and Lease, the pods bound to it, what those pods reference).
// As in Kubernetes, a node may not delete its Node: registering it again
// would shed the taints and labels an administrator gave it, which
// NodeRestriction (authz/node.GuardNode) keeps the node from changing.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(verbs("create", "get", "list", "watch", "patch", "update"), groups(legacyGroup), "nodes"),
		rule(verbs("patch", "update"), groups(legacyGroup), "nodes/status"),
		rule(verbs("get", "list", "watch", "delete"), groups(legacyGroup), "pods"),
		rule(verbs("patch", "update"), groups(legacyGroup), "pods/status"),
		rule(verbs("create"), groups(legacyGroup), "pods/eviction"),
		rule(readVerbs, groups(legacyGroup), "services", "endpoints"),
		rule(readVerbs, groups("discovery.k8s.io"), "endpointslices"),
		rule(verbs("create", "patch", "update"), groups(legacyGroup, "events.k8s.io"), "events"),
		rule(verbs("get", "list", "watch"), groups(legacyGroup), "secrets", "configmaps", "persistentvolumeclaims"),
		rule(verbs("get"), groups(legacyGroup), "persistentvolumes"),
		rule(verbs("get", "create", "update", "patch", "delete"), groups("coordination.k8s.io"), "leases"),
		rule(verbs("create"), groups(legacyGroup), "serviceaccounts/token"),
		rule(verbs("create"), groups("authentication.k8s.io"), "tokenreviews"),
		rule(verbs("create"), groups("authorization.k8s.io"), "subjectaccessreviews", "localsubjectaccessreviews"),
	}
}
