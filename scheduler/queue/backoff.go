package queue

import "time"

// backoffWindow is the granularity of backoff expiries: pods whose backoff
// ends in the same second are ordered as activeQ orders them, so that the
// pod backoffQ gives up first when activeQ is empty is the one activeQ would
// have served first (kube-scheduler's SchedulerPopFromBackoffQ).
const backoffWindow = time.Second

// backoffQueue holds the pods waiting out a backoff, in two heaps, as
// kube-scheduler's: pods a plugin rejected, which Pop may take early when
// activeQ is empty, and pods that failed with an error, which always wait
// their backoff out.
type backoffQueue struct {
	rejected *keyedHeap
	errored  *keyedHeap
}

func newBackoffQueue(expiry func(*QueuedPodInfo) time.Time, activeLess func(a, b *QueuedPodInfo) bool) *backoffQueue {
	return &backoffQueue{
		rejected: newKeyedHeap(func(a, b *QueuedPodInfo) bool {
			ea, eb := expiry(a), expiry(b)
			if !ea.Equal(eb) {
				return ea.Before(eb)
			}
			return activeLess(a, b)
		}),
		errored: newKeyedHeap(func(a, b *QueuedPodInfo) bool { return expiry(a).Before(expiry(b)) }),
	}
}

// failedWithError reports whether p's last attempt ended in an error rather
// than a plugin's verdict.
func failedWithError(p *QueuedPodInfo) bool { return len(p.UnschedulablePlugins) == 0 }

// AddOrUpdate puts p in the heap its failure belongs to.
func (b *backoffQueue) AddOrUpdate(p *QueuedPodInfo) {
	if failedWithError(p) {
		b.rejected.Delete(p.key)
		b.errored.AddOrUpdate(p)
		return
	}
	b.errored.Delete(p.key)
	b.rejected.AddOrUpdate(p)
}

func (b *backoffQueue) Get(key string) (*QueuedPodInfo, bool) {
	if p, ok := b.rejected.Get(key); ok {
		return p, true
	}
	return b.errored.Get(key)
}

func (b *backoffQueue) Delete(key string) bool {
	return b.rejected.Delete(key) || b.errored.Delete(key)
}

func (b *backoffQueue) Len() int { return b.rejected.Len() + b.errored.Len() }

// popCompleted removes and returns the pods of both heaps whose backoff is over.
func (b *backoffQueue) popCompleted(backingOff func(*QueuedPodInfo) bool) []*QueuedPodInfo {
	var done []*QueuedPodInfo
	for _, h := range []*keyedHeap{b.rejected, b.errored} {
		for p := h.Peek(); p != nil && !backingOff(p); p = h.Peek() {
			done = append(done, h.Pop())
		}
	}
	return done
}
