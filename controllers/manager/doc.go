// Package manager runs skiff's controllers as one API client: a single shared informer factory over the
// given clientset, an event broadcaster writing core/v1 Events, every enabled controller, and leader
// election on the Lease kube-system/skiff-controller-manager so that only one instance acts at a time.
//
//	m, err := manager.New(clientset, manager.Config{}, manager.Options{Logger: log})
//	err = m.RunWithLeaderElection(ctx) // or m.Run(ctx) when no other instance can exist
//
// The controllers are listed once, in Registry (name → constructor).
package manager
