package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ControllerNamespace holds the controllers' service accounts.
const ControllerNamespace = "kube-system"

// ControllerRolePrefix names a controller's ClusterRole and its binding:
// system:controller:<service account>.
const ControllerRolePrefix = "system:controller:"

// Service accounts (in kube-system) the controller manager's loops act as,
// each bound to system:controller:<name>. The names are Kubernetes' (the
// node IPAM and node lifecycle loops share node-controller, as there).
const (
	CronJobController        = "cronjob-controller"
	DaemonSetController      = "daemon-set-controller"
	DeploymentController     = "deployment-controller"
	DisruptionController     = "disruption-controller"
	EndpointController       = "endpoint-controller"
	EndpointSliceController  = "endpointslice-controller"
	EndpointSliceMirroring   = "endpointslicemirroring-controller"
	GarbageCollector         = "generic-garbage-collector"
	JobController            = "job-controller"
	LegacyTokenCleaner       = "legacy-service-account-token-cleaner"
	NamespaceController      = "namespace-controller"
	NodeController           = "node-controller"
	PodGarbageCollector      = "pod-garbage-collector"
	ReplicaSetController     = "replicaset-controller"
	ReplicationController    = "replication-controller"
	ResourceQuotaController  = "resourcequota-controller"
	RootCACertPublisher      = "root-ca-cert-publisher"
	ServiceAccountController = "service-account-controller"
	StatefulSetController    = "statefulset-controller"
	// skiff's volume loops: Kubernetes' binder account; the local-path
	// provisioner and the claim/volume protection loop have their own.
	PersistentVolumeBinder     = "persistent-volume-binder"
	LocalPathProvisioner       = "local-path-provisioner"
	VolumeProtectionController = "volume-protection-controller"
)

const policyGroup = "policy"

// eventsRule lets a controller record Events.
func eventsRule() rbacv1.PolicyRule {
	return rule(verbs("create", "update", "patch"), groups(legacyGroup, "events.k8s.io"), "events")
}

// controllerRoles are the per-controller roles, following Kubernetes'
// controller policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
// controller_policy.go) for the controllers skiff has. Where a skiff loop
// makes a call Kubernetes' does not, the extra verb is noted.
func controllerRoles() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		CronJobController: {
			rule(verbs("get", "list", "watch", "update"), groups(batchGroup), "cronjobs"),
			rule(verbs("get", "list", "watch", "create", "update", "delete", "patch"), groups(batchGroup), "jobs"),
			rule(verbs("update"), groups(batchGroup), "cronjobs/status"),
			rule(verbs("update"), groups(batchGroup), "cronjobs/finalizers"),
			rule(verbs("list", "delete"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		DaemonSetController: {
			rule(verbs("get", "list", "watch"), groups(appsGroup), "daemonsets"),
			rule(verbs("update"), groups(appsGroup), "daemonsets/status"),
			rule(verbs("update"), groups(appsGroup), "daemonsets/finalizers"),
			rule(verbs("list", "watch"), groups(legacyGroup), "nodes"),
			rule(verbs("list", "watch", "create", "delete", "patch"), groups(legacyGroup), "pods"),
			rule(verbs("create"), groups(legacyGroup), "pods/binding"),
			rule(verbs("get", "list", "watch", "create", "delete", "update", "patch"), groups(appsGroup), "controllerrevisions"),
			eventsRule(),
		},
		DeploymentController: {
			rule(verbs("get", "list", "watch", "update"), groups(appsGroup), "deployments"),
			rule(verbs("update"), groups(appsGroup), "deployments/status"),
			rule(verbs("update"), groups(appsGroup), "deployments/finalizers"),
			rule(verbs("get", "list", "watch", "create", "update", "patch", "delete"), groups(appsGroup), "replicasets"),
			rule(verbs("get", "list", "update", "watch"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		DisruptionController: {
			rule(verbs("get", "list", "watch"), groups(appsGroup), "deployments", "replicasets", "statefulsets"),
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "replicationcontrollers"),
			rule(verbs("get", "list", "watch"), groups(policyGroup), "poddisruptionbudgets"),
			rule(verbs("update"), groups(policyGroup), "poddisruptionbudgets/status"),
			rule(verbs("get"), groups("*"), "*/scale"),
			eventsRule(),
		},
		EndpointController: {
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "services", "pods"),
			rule(verbs("get", "list", "create", "update", "delete"), groups(legacyGroup), "endpoints"),
			rule(verbs("create"), groups(legacyGroup), "endpoints/restricted"),
			eventsRule(),
		},
		EndpointSliceController: {
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "services", "pods", "nodes"),
			rule(verbs("update"), groups(legacyGroup), "services/finalizers"),
			rule(verbs("create", "update", "delete"), groups("discovery.k8s.io"), "endpointslices"),
			eventsRule(),
		},
		EndpointSliceMirroring: {
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "services", "endpoints"),
			rule(verbs("update"), groups(legacyGroup), "services/finalizers"),
			rule(verbs("update"), groups(legacyGroup), "endpoints/finalizers"),
			rule(verbs("get", "list", "create", "update", "delete"), groups("discovery.k8s.io"), "endpointslices"),
			eventsRule(),
		},
		GarbageCollector: {
			rule(verbs("get", "list", "watch", "patch", "update", "delete"), groups("*"), "*"),
			eventsRule(),
		},
		JobController: {
			// delete: skiff's job controller also does ttlSecondsAfterFinished
			// (Kubernetes' ttl-after-finished-controller may delete jobs).
			rule(verbs("get", "list", "watch", "update", "patch", "delete"), groups(batchGroup), "jobs"),
			rule(verbs("update", "patch"), groups(batchGroup), "jobs/status"),
			rule(verbs("update"), groups(batchGroup), "jobs/finalizers"),
			rule(verbs("list", "watch", "create", "delete", "patch"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		LegacyTokenCleaner: {
			// The tracking ConfigMap is read live; the Secrets, accounts
			// and pods come from the manager's shared informers.
			{Verbs: verbs("get"), APIGroups: groups(legacyGroup), Resources: []string{"configmaps"},
				ResourceNames: []string{"kube-apiserver-legacy-service-account-token-tracking"}},
			rule(verbs("patch", "delete"), groups(legacyGroup), "secrets"),
		},
		NamespaceController: {
			rule(verbs("get", "list", "watch", "delete"), groups(legacyGroup), "namespaces"),
			rule(verbs("update"), groups(legacyGroup), "namespaces/finalize", "namespaces/status"),
			rule(verbs("get", "list", "delete", "deletecollection"), groups("*"), "*"),
		},
		NodeController: {
			rule(verbs("get", "list", "update", "delete", "patch"), groups(legacyGroup), "nodes"),
			rule(verbs("patch", "update"), groups(legacyGroup), "nodes/status"),
			rule(verbs("update", "patch"), groups(legacyGroup), "pods/status"), // patch: taint eviction marks pods DisruptionTarget
			rule(verbs("list", "delete"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		PodGarbageCollector: {
			rule(verbs("list", "watch", "delete"), groups(legacyGroup), "pods"),
			rule(verbs("get", "list"), groups(legacyGroup), "nodes"),
			rule(verbs("patch"), groups(legacyGroup), "pods/status"),
			eventsRule(),
		},
		ReplicaSetController: {
			rule(verbs("get", "list", "watch", "update"), groups(appsGroup), "replicasets"),
			rule(verbs("update"), groups(appsGroup), "replicasets/status"),
			rule(verbs("update"), groups(appsGroup), "replicasets/finalizers"),
			rule(verbs("list", "watch", "patch", "create", "delete"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		ReplicationController: {
			rule(verbs("get", "list", "watch", "update"), groups(legacyGroup), "replicationcontrollers"),
			rule(verbs("update"), groups(legacyGroup), "replicationcontrollers/status"),
			rule(verbs("update"), groups(legacyGroup), "replicationcontrollers/finalizers"),
			rule(verbs("list", "watch", "patch", "create", "delete"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
		ResourceQuotaController: {
			rule(verbs("list", "watch"), groups("*"), "*"),
			// get: skiff reads the quota fresh before writing its status.
			rule(verbs("get"), groups(legacyGroup), "resourcequotas"),
			rule(verbs("update"), groups(legacyGroup), "resourcequotas/status"),
			eventsRule(),
		},
		RootCACertPublisher: {
			rule(verbs("create", "update"), groups(legacyGroup), "configmaps"),
			eventsRule(),
		},
		ServiceAccountController: {
			rule(verbs("create"), groups(legacyGroup), "serviceaccounts"),
			eventsRule(),
		},
		StatefulSetController: {
			rule(verbs("list", "watch"), groups(legacyGroup), "pods"),
			rule(verbs("get", "list", "watch"), groups(appsGroup), "statefulsets"),
			rule(verbs("update"), groups(appsGroup), "statefulsets/status"),
			rule(verbs("update"), groups(appsGroup), "statefulsets/finalizers"),
			rule(verbs("get", "create", "delete", "update", "patch"), groups(legacyGroup), "pods"),
			rule(verbs("get", "create", "delete", "update", "patch", "list", "watch"), groups(appsGroup), "controllerrevisions"),
			// update, patch and delete: claims' owners follow the set's
			// persistentVolumeClaimRetentionPolicy, as in Kubernetes 1.27+.
			rule(verbs("get", "create", "delete", "update", "patch"), groups(legacyGroup), "persistentvolumeclaims"),
			eventsRule(),
		},
		PersistentVolumeBinder: {
			rule(verbs("get", "list", "watch", "update", "create", "delete"), groups(legacyGroup), "persistentvolumes"),
			rule(verbs("update"), groups(legacyGroup), "persistentvolumes/status"),
			rule(verbs("get", "list", "watch", "update"), groups(legacyGroup), "persistentvolumeclaims"),
			rule(verbs("update"), groups(legacyGroup), "persistentvolumeclaims/status"),
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "nodes", "pods"),
			rule(verbs("get", "list", "watch"), groups("storage.k8s.io"), "storageclasses"),
			eventsRule(),
		},
		LocalPathProvisioner: {
			rule(verbs("get", "list", "watch", "create", "update", "delete"), groups(legacyGroup), "persistentvolumes"),
			rule(verbs("get", "list", "watch", "update"), groups(legacyGroup), "persistentvolumeclaims"),
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "nodes"),
			rule(verbs("get", "list", "watch"), groups("storage.k8s.io"), "storageclasses"),
			eventsRule(),
		},
		VolumeProtectionController: {
			rule(verbs("get", "list", "watch", "update"), groups(legacyGroup), "persistentvolumeclaims", "persistentvolumes"),
			rule(verbs("get", "list", "watch"), groups(legacyGroup), "pods"),
			eventsRule(),
		},
	}
}

// ControllerServiceAccounts lists the controllers' service account names.
func ControllerServiceAccounts() []string {
	var out []string
	for name := range controllerRoles() {
		out = append(out, name)
	}
	return out
}

// controllerClusterRoles are system:controller:<name> for each controller.
func controllerClusterRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for name, rules := range controllerRoles() {
		out = append(out, clusterRole(ControllerRolePrefix+name, nil, rules...))
	}
	return out
}

// controllerClusterRoleBindings bind each role to kube-system/<name>.
func controllerClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for name := range controllerRoles() {
		out = append(out, clusterRoleBinding(ControllerRolePrefix+name, ControllerRolePrefix+name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ControllerNamespace}))
	}
	return out
}
