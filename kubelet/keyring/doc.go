// Package keyring turns a pod's image pull secrets into the credentials
// to try for one image, as the kubelet's credential keyring does: secrets
// of type kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg, each
// entry keyed by a registry host (with optional port, "*" globs per
// domain label, and a path prefix); the most specific keys first.
package keyring
