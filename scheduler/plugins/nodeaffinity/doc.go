// Package nodeaffinity is the NodeAffinity plugin: spec.nodeSelector and
// required node affinity filter nodes; preferred node affinity terms score
// them by the sum of the weights they match. Matching is component-helpers'
// nodeaffinity, the code kube-scheduler and the kubelet share.
package nodeaffinity
