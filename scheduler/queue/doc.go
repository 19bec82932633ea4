// Package queue holds the pods waiting to be scheduled, in three places:
//
//   - activeQ: ready to be tried, highest priority first, then oldest first;
//   - backoffQ: failed recently and waiting out an exponential backoff
//     (1s doubling to 10s by default, ending with the whole second it falls
//     in) before going back to activeQ; while activeQ is empty, Pop takes
//     the pods a plugin rejected from here early, those of the same second
//     in activeQ's order (pods that failed with an error wait it out);
//   - unschedulable: failed and waiting for a cluster event (a node added or
//     changed, a pod deleted or finished) that might make them fit; anything
//     left there too long is flushed back periodically so nothing waits forever.
//
// A pod whose attempt failed while a cluster event that may help it arrived
// (one its rejecting plugins' queueing hints answer Queue for, judged once
// the attempt has named them) goes to backoffQ rather than unschedulable, so an event that raced
// with its attempt is not lost; other events leave it waiting.
// Updates of a pod being scheduled are held for the attempt's end in the same
// way (not queued as a second copy), and a pod deleted meanwhile is dropped.
//
// A fourth place, the gated, holds pods the PreEnqueue plugins refuse, asked
// whenever a pod would enter activeQ or backoffQ: they wait for an update of
// the pod, or for a plugin to call Ungate or Activate once its verdict may
// have changed (preemption done deleting the pod's victims).
package queue
