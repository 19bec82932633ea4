package agent

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventRecorders hands out the Event recorders of the nodes in a process.
// Each node gets a client-go broadcaster of its own, as each kubelet has:
// its recorder has the source kubelet/<node>, and its Events are written
// with that node's own client (its own credential, so the node authorizer
// applies). A broadcaster writes one Event at a time and drops, without a
// word, what does not fit its queue of 1,000; sixteen shared by 1,000
// hollow nodes fell behind in a burst of 10,000 pods and lost about a fifth
// of the kubelets' Events, which is why they are not shared.
type EventRecorders struct {
	mu           sync.Mutex
	broadcasters []record.EventBroadcaster
}

// NewEventRecorders returns an empty set of recorders; Stop releases them.
func NewEventRecorders() *EventRecorders { return &EventRecorders{} }

// For returns the recorder of node, whose Events client writes.
func (r *EventRecorders) For(node string, client Client) record.EventRecorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	r.mu.Lock()
	r.broadcasters = append(r.broadcasters, b)
	r.mu.Unlock()
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
}

// Stop stops recording; Events not yet written are dropped.
func (r *EventRecorders) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.broadcasters {
		b.Shutdown()
	}
	r.broadcasters = nil
}
