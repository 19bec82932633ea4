package queue

import "container/heap"

// keyedHeap is a heap of queued pods addressable by key, so that updates and
// deletes are O(log n).
type keyedHeap struct {
	items []*QueuedPodInfo
	index map[string]int
	less  func(a, b *QueuedPodInfo) bool
}

func newKeyedHeap(less func(a, b *QueuedPodInfo) bool) *keyedHeap {
	return &keyedHeap{index: map[string]int{}, less: less}
}

// heap.Interface over items; not for callers.
type heapAdapter keyedHeap

func (h *heapAdapter) Len() int           { return len(h.items) }
func (h *heapAdapter) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *heapAdapter) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[h.items[i].key] = i
	h.index[h.items[j].key] = j
}
func (h *heapAdapter) Push(x any) {
	p := x.(*QueuedPodInfo)
	h.index[p.key] = len(h.items)
	h.items = append(h.items, p)
}
func (h *heapAdapter) Pop() any {
	last := len(h.items) - 1
	p := h.items[last]
	h.items[last] = nil
	h.items = h.items[:last]
	delete(h.index, p.key)
	return p
}

func (h *keyedHeap) Len() int { return len(h.items) }

// AddOrUpdate inserts p or replaces the item with p's key.
func (h *keyedHeap) AddOrUpdate(p *QueuedPodInfo) {
	if i, ok := h.index[p.key]; ok {
		h.items[i] = p
		heap.Fix((*heapAdapter)(h), i)
		return
	}
	heap.Push((*heapAdapter)(h), p)
}

// Get returns the item with key.
func (h *keyedHeap) Get(key string) (*QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

// Delete removes the item with key, reporting whether it was there.
func (h *keyedHeap) Delete(key string) bool {
	i, ok := h.index[key]
	if !ok {
		return false
	}
	heap.Remove((*heapAdapter)(h), i)
	return true
}

// Peek returns the top item or nil.
func (h *keyedHeap) Peek() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// Pop removes and returns the top item or nil.
func (h *keyedHeap) Pop() *QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop((*heapAdapter)(h)).(*QueuedPodInfo)
}
