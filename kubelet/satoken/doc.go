// Package satoken keeps the service account tokens of a node's pods, as
// the kubelet's token manager: each projected serviceAccountToken volume
// source gets a token from the TokenRequest API, bound to its pod, which
// is reused until it nears its end and then requested again, so a running
// container always finds a valid token in its file.
//
// A token is renewed once 80% of its lifetime has passed or it is a day
// old, whichever comes first (Kubernetes' rule); if renewal fails, the
// old token is served until it expires. Tokens of a removed pod are
// forgotten with it.
package satoken
