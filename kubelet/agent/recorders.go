package agent

import (
	"hash/fnv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventRecorders hands out the pod Event recorders of one or more nodes in
// a process: each node's recorder has the source kubelet/<node>, as the
// kubelet's, and its Events are written with that node's own client (its
// own credential, so the node authorizer applies). A process of many
// hollow nodes shares a few client-go broadcasters (each node always on the
// same one, so its Events are aggregated and rate-limited as a kubelet's)
// instead of keeping one with its queues per node.
type EventRecorders struct {
	shards []*eventShard
}

type eventShard struct {
	broadcaster record.EventBroadcaster
	stop        func()
	sinks       nodeSinks
}

// nodeSinks routes each Event to the sink of the node that recorded it.
type nodeSinks struct {
	mu     sync.RWMutex
	byNode map[string]*typedcorev1.EventSinkImpl
}

// NewEventRecorders returns recorders spread over shards broadcasters (at
// least one); Stop releases them.
func NewEventRecorders(shards int) *EventRecorders {
	r := &EventRecorders{}
	for i := 0; i < max(shards, 1); i++ {
		s := &eventShard{broadcaster: record.NewBroadcaster(), sinks: nodeSinks{byNode: map[string]*typedcorev1.EventSinkImpl{}}}
		w := s.broadcaster.StartRecordingToSink(&s.sinks)
		s.stop = w.Stop
		r.shards = append(r.shards, s)
	}
	return r
}

// For returns the recorder of node, whose Events client writes.
func (r *EventRecorders) For(node string, client Client) record.EventRecorder {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	s := r.shards[int(h.Sum32()%uint32(len(r.shards)))]
	s.sinks.mu.Lock()
	s.sinks.byNode[node] = &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}
	s.sinks.mu.Unlock()
	return s.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: node})
}

// Stop stops recording; Events not yet written are dropped.
func (r *EventRecorders) Stop() {
	for _, s := range r.shards {
		s.stop()
		s.broadcaster.Shutdown()
	}
}

func (s *nodeSinks) sink(e *corev1.Event) (*typedcorev1.EventSinkImpl, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sink := s.byNode[e.Source.Host]; sink != nil {
		return sink, nil
	}
	return nil, errNoSink(e.Source.Host)
}

type errNoSink string

func (e errNoSink) Error() string { return "no event client for node " + string(e) }

func (s *nodeSinks) Create(e *corev1.Event) (*corev1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Create(e)
}

func (s *nodeSinks) Update(e *corev1.Event) (*corev1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Update(e)
}

func (s *nodeSinks) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Patch(e, data)
}
