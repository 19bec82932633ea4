// Package controllertest holds what controller tests share: a fake clientset that names objects from
// generateName and gives them uids (as the apiserver does, and the client-go fake does not), helpers
// to load fixtures into informer indexers, and filters over the recorded client actions.
package controllertest
