// Package nodeaffinity is the NodeAffinity plugin: spec.nodeSelector and
// required node affinity filter nodes; preferred node affinity terms score
// them by the sum of the weights they match. A profile's NodeAffinityArgs
// (Args) add an affinity to every pod it schedules: its required terms
// filter first, its preferred terms are scored with the pod's. Matching is
// component-helpers' nodeaffinity, the code kube-scheduler and the kubelet
// share.
package nodeaffinity
