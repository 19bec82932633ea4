// Package expectations remembers the creates and deletes a controller has issued but not yet observed
// through its informers.
//
// A controller's cache lags the API server. Without expectations, a ReplicaSet controller that has just
// created two pods could sync again before the informer delivers them, see two pods missing, and create
// two more. Each controller key holds the number of creations still to be observed and the set of object
// keys whose deletion is still to be observed; sync skips creating or deleting while either is pending.
// Pending expectations expire after a timeout so a lost watch event cannot wedge a controller forever.
package expectations
