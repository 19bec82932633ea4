// Package nodename is the NodeName plugin: a pod that names its node
// (spec.nodeName) fits only there.
package nodename
