// Package expectations remembers the creates and deletes a controller has issued but not yet observed
// through its informers.
//
// A controller's cache lags the API server. Without expectations, a ReplicaSet controller that has just
// created two pods could sync again before the informer delivers them, see two pods missing, and create
// two more. Each controller key holds the number of creations still to be observed and the set of object
// keys whose deletion is still to be observed; sync skips creating or deleting while either is pending.
// Pending expectations expire after a timeout so a lost watch event cannot wedge a controller forever.
// As in Kubernetes, expectations set on a record that was met or has expired replace it, so a deletion
// never observed delays the controller once, by at most the timeout, not again on every later action;
// several calls while a record is still pending (one sync expecting creations and deletions) add up.
package expectations
