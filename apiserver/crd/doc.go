// Package crd serves CustomResourceDefinitions and makes each one's custom
// resource served without a restart: the Controller lists and watches CRDs
// in the store, adds one registry entry per served version (with a
// strategy that prunes, defaults and validates objects against the
// version's openAPIV3Schema), publishes the CRD's status conditions
// (NamesAccepted, Established), and, when the CRD is deleted, deletes its
// objects (honouring their finalizers, as Kubernetes' crdFinalizer) before
// the CRD and its resource go.
package crd
