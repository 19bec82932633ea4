// Package scheduler is skiff's pod scheduler, an ordinary API client: it
// learns the cluster through shared informers, decides with the plugins of
// the framework, and writes only through the API (pods/binding, pod status,
// Events, and the victims' deletion when preempting). It never touches storage.
//
// One goroutine runs scheduling attempts one pod at a time (scheduleOne:
// PreFilter → Filter → PostFilter on failure → PreScore → Score → Reserve,
// assuming the pod in the cache); each bind then runs in its own goroutine, so
// the next attempt starts while the API call is in flight. The cache counts
// assumed pods, so those concurrent decisions never overcommit a node.
//
// Only one scheduler should act per cluster: RunWithLeaderElection holds a
// Lease (kube-system/kube-scheduler by default) while scheduling.
package scheduler
