// Package volumezone is the VolumeZone plugin: a pod whose bound
// PersistentVolumeClaims name volumes labelled with a zone or region
// (topology.kubernetes.io/zone and /region, or the deprecated
// failure-domain.beta.kubernetes.io ones; a zone label may list several
// zones joined by "__") fits only the nodes labelled with one of those
// values, as kube-scheduler's. Unbound claims of WaitForFirstConsumer classes
// are left to VolumeBinding; a node with no zone or region label takes any
// volume (a single-zone cluster).
package volumezone
