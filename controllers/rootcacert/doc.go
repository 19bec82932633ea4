// Package rootcacert publishes the cluster CA to every namespace, as
// Kubernetes' root-ca-cert-publisher: each active namespace gets the
// ConfigMap kube-root-ca.crt holding the CA bundle (PEM) under ca.crt and
// the kubernetes.io/description annotation saying what it is for.
//
// Pods need the CA to trust the API server they reach at
// kubernetes.default.svc: the projected service account volume
// (kube-api-access-*) that admission gives every pod takes ca.crt from this
// ConfigMap, so a pod in a namespace without it cannot start. The CA is
// published as a ConfigMap, not a Secret, because it is public and every
// pod may read it.
//
// The loop is level-based on namespaces: a namespace's arrival or change,
// and any change to or deletion of its kube-root-ca.crt, enqueue the
// namespace; sync creates the ConfigMap when it is missing and puts back
// its data and description when someone changed them, keeping any other
// labels and annotations. Terminating namespaces are left alone (the
// namespace controller is emptying them). The controller records no
// Events, as Kubernetes'.
package rootcacert
