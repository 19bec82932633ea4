// Package crd serves CustomResourceDefinitions and makes each one's custom
// resource served without a restart: the Controller lists and watches CRDs
// in the store, adds one registry entry per served version (with a
// strategy that prunes, defaults and validates objects against the
// version's openAPIV3Schema), publishes the CRD's status conditions
// (NamesAccepted, Established), and removes the resource and its objects
// when the CRD is deleted.
package crd
