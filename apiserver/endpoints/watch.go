package endpoints

import (
	"bytes"
	"context"
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// Watch event types, as on the wire.
const (
	evAdded    = "ADDED"
	evModified = "MODIFIED"
	evDeleted  = "DELETED"
	evBookmark = "BOOKMARK"
	evError    = "ERROR"
)

// initialEventsEnd is the annotation on the bookmark that ends the initial
// events of a streaming list.
const initialEventsEnd = "k8s.io/initial-events-end"

// watchStream writes watch events, one flush per event: newline-separated
// JSON {"type","object"} lines, or for protobuf clients length-prefixed
// metav1.WatchEvent frames whose object is in the protobuf envelope.
type watchStream struct {
	h    *Handler
	req  *request
	kind outputKind
	enc  encoding
	w    http.ResponseWriter
	fl   http.Flusher
}

// contentType is the reply's Content-Type for the stream's encoding.
func (s *watchStream) contentType() string {
	if s.enc == encProtobuf {
		return mediaProtobuf + ";stream=watch"
	}
	return mediaJSON
}

func (s *watchStream) send(typ string, obj runtime.Object) error {
	out, err := s.h.transform(s.req, s.kind, obj)
	if err != nil {
		return err
	}
	return s.write(typ, out)
}

// write encodes one event; the caller flushes.
func (s *watchStream) write(typ string, obj runtime.Object) error {
	frame, err := s.frame(typ, obj)
	if err != nil {
		return err
	}
	_, err = s.w.Write(frame)
	return err
}

// sendShared sends a store event's object that other watchers receive too:
// plain objects reuse the frame the first of them encoded; Tables and
// metadata depend on the request, so those are built per watcher: metadata
// from a copy of the object's metadata alone (the garbage collector's
// metadata watches see every pod event), Tables from a copy of the object.
func (s *watchStream) sendShared(typ string, e *sharedEvent) error {
	switch s.kind {
	case outPartial:
		return s.send(typ, e.obj)
	case outTable:
		return s.send(typ, e.obj.DeepCopyObject())
	}
	frame, err := e.frame(typ, s.enc, func() ([]byte, error) { return s.frame(typ, e.obj) })
	if err != nil {
		return err
	}
	_, err = s.w.Write(frame)
	return err
}

// frame encodes one event in the stream's encoding.
func (s *watchStream) frame(typ string, obj runtime.Object) ([]byte, error) {
	if s.enc == encProtobuf {
		data, err := encodeProtobuf(obj)
		if err != nil {
			return nil, err
		}
		// The length prefix and the event in one buffer: marshalling the
		// event on its own and then copying it behind the prefix would
		// copy every object once more.
		ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: data}}
		n := ev.Size()
		frame := make([]byte, 4+n)
		binary.BigEndian.PutUint32(frame, uint32(n))
		if _, err := ev.MarshalToSizedBuffer(frame[4:]); err != nil {
			return nil, err
		}
		return frame, nil
	}
	data, err := encodeObject(obj)
	if err != nil {
		return nil, err
	}
	// One event a line, as Kubernetes writes JSON watches: the unstructured
	// encoder (custom resources) ends the object with a newline.
	data = bytes.TrimSuffix(data, []byte("\n"))
	frame := make([]byte, 0, len(data)+32)
	frame = append(frame, `{"type":"`...)
	frame = append(frame, typ...)
	frame = append(frame, `","object":`...)
	frame = append(frame, data...)
	return append(frame, "}\n"...), nil
}

// start sends the reply's header: a watch is a 200 whatever comes after.
func (s *watchStream) start() {
	setWarnings(s.w, s.req.warnings)
	s.w.Header().Set("Content-Type", s.contentType())
	s.w.Header().Set("Cache-Control", "no-cache, private")
	s.w.WriteHeader(http.StatusOK)
	s.flushWritten()
}

// flushWritten sends what was written so far to the client.
func (s *watchStream) flushWritten() {
	if s.fl != nil {
		s.fl.Flush()
	}
}

// bookmark sends a BOOKMARK carrying only kind, apiVersion and resourceVersion
// (plus the initial-events-end annotation when ending a streaming list).
func (s *watchStream) bookmark(rev int64, initialEnd bool) error {
	obj := newObject(s.req.res)
	if s.kind == outPartial {
		// A metadata client (as=PartialObjectMetadata) decodes only that kind, bookmarks included.
		obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}}
	}
	m := accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{initialEventsEnd: "true"})
	}
	// Bookmarks are sent as the object kind (or PartialObjectMetadata), never as a Table row.
	return s.write(evBookmark, obj)
}

func (s *watchStream) sendError(err error) {
	st := asStatus(err)
	if s.write(evError, &st) == nil {
		s.flushWritten()
	}
}

// watch serves ?watch=true: optional initial events, then every change.
func (h *Handler) watch(req *request) error {
	sel, err := parseSelection(req)
	if err != nil {
		return err
	}
	if req.info.Name != "" {
		// A watch of one object was authorized for that name alone.
		if err := sel.onlyName(req.info.Name); err != nil {
			return err
		}
	}
	kind, enc, err := negotiate(req.r.Header.Get("Accept"), !req.res.Unstructured())
	if err != nil {
		return err
	}
	rv, err := parseRV(req.query("resourceVersion"))
	if err != nil {
		return errors.NewBadRequest(err.Error())
	}
	bookmarks := req.query("allowWatchBookmarks") == "true"
	sendInitial := false
	switch req.query("sendInitialEvents") {
	case "true":
		sendInitial = true
	case "false":
	case "":
		// Legacy semantics: "" and "0" start with the current state.
		sendInitial = rv == 0
	default:
		return errors.NewBadRequest("sendInitialEvents must be true or false")
	}
	if err := validateListOptions(req, true); err != nil {
		return err
	}
	timeout := h.maxWatchTimeout/2 + time.Duration(rand.Int64N(int64(h.maxWatchTimeout/2)+1))
	if s := req.query("timeoutSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", s))
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(req.ctx, timeout)
	defer cancel()
	req.ctx = ctx
	// A custom resource's watch ends when its CRD is deleted or its spec
	// changes, as Kubernetes ends it by tearing down the resource's storage:
	// the stream just ends (no ERROR event) and the client re-lists, to a 404
	// or to what is served now, instead of keeping a dead watch for minutes.
	if retired := req.res.Retired; retired != nil {
		go func() {
			select {
			case <-retired:
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	prefix := listPrefix(req.res, req.info.Namespace, sel)
	start := rv
	var initial *listed
	if sendInitial {
		initial, err = h.collect(req, prefix, sel, 0, false, "", 0)
		if err != nil {
			return storeError(err, req.res.GroupResource(), "")
		}
		start = initial.revision
		if rv > 0 && start < rv {
			return tooLargeRV(rv, start)
		}
	}
	if start == 0 {
		if start, err = h.store.Revision(ctx); err != nil {
			return storeError(err, req.res.GroupResource(), "")
		}
	}
	defer h.events.watchStarted(req.res)()
	fl, _ := req.w.(http.Flusher)
	s := &watchStream{h: h, req: req, kind: kind, enc: enc, w: req.w, fl: fl}
	w, err := h.store.Watch(ctx, storage.WatchOptions{Prefix: prefix, AfterRevision: start, ProgressNotify: bookmarks, Trigger: h.trigger(req.res, sel)})
	if err != nil {
		if !stderrors.Is(err, storage.ErrCompacted) {
			return storeError(err, req.res.GroupResource(), "")
		}
		// As Kubernetes' watch cache answers a revision it no longer
		// holds: a watch whose one event is ERROR 410 Expired naming
		// the revision asked for and the newest one gone.
		msg := fmt.Sprintf("too old resource version: %d", start)
		if cr, ok := h.store.(interface {
			CompactRevision(context.Context) (int64, error)
		}); ok {
			if floor, ferr := cr.CompactRevision(ctx); ferr == nil {
				msg = fmt.Sprintf("too old resource version: %d (%d)", start, floor)
			}
		}
		s.start()
		s.sendError(errors.NewResourceExpired(msg))
		return nil
	}
	defer w.Stop()
	s.start()
	if initial != nil {
		for _, obj := range initial.items {
			if err := s.send(evAdded, obj); err != nil {
				return nil
			}
		}
		if req.query("sendInitialEvents") == "true" {
			if err := s.bookmark(initial.revision, true); err != nil {
				return nil
			}
		}
		s.flushWritten()
	}
	for {
		evs, ok := w.Next()
		if !ok {
			if err := w.Err(); err != nil {
				if stderrors.Is(err, storage.ErrCompacted) {
					s.sendError(errors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%v)", start, err)))
				} else if ctx.Err() == nil {
					s.sendError(storeError(err, req.res.GroupResource(), ""))
				}
			}
			return nil
		}
		// Every event that was ready goes out with one flush: under load an
		// informer's watch gets several per wake-up, and each flush is an
		// HTTP/2 frame and a TLS record of its own.
		for _, ev := range evs {
			if err := h.deliver(s, sel, ev, bookmarks); err != nil {
				return nil
			}
		}
		s.flushWritten()
	}
}

// deliver turns one store event into zero or one watch event, moving objects
// in and out of the selection as Kubernetes does.
func (h *Handler) deliver(s *watchStream, sel *selection, ev storage.Event, bookmarks bool) error {
	res := s.req.res
	switch ev.Type {
	case storage.Progress:
		if bookmarks {
			return s.bookmark(ev.Revision, false)
		}
		return nil
	case storage.Created:
		e := h.events.get(res, ev.KV, ev.KV.Value, ev.KV.ModRevision)
		if e.err != nil {
			return nil
		}
		if sel.matchesShared(res, e) {
			return s.sendShared(evAdded, e)
		}
	case storage.Updated:
		e := h.events.get(res, ev.KV, ev.KV.Value, ev.KV.ModRevision)
		if e.err != nil {
			return nil
		}
		now := sel.matchesShared(res, e)
		before := now
		if !sel.everything() && ev.PrevKV != nil {
			if old := h.events.get(res, ev.PrevKV, ev.PrevKV.Value, ev.PrevKV.ModRevision); old.err == nil {
				before = sel.matchesShared(res, old)
			}
		}
		switch {
		case now && before:
			return s.sendShared(evModified, e)
		case now:
			return s.sendShared(evAdded, e)
		case before:
			// Leaving the selection: the last state it selected, at
			// this event's revision (before implies PrevKV).
			if left := h.events.left(res, ev.KV, ev.PrevKV); left.err == nil {
				return s.sendShared(evDeleted, left)
			}
			return s.sendShared(evDeleted, e)
		}
	case storage.Deleted:
		value := ev.KV.Value
		if len(value) == 0 && ev.PrevKV != nil {
			value = ev.PrevKV.Value
		}
		e := h.events.get(res, ev.KV, value, ev.Revision)
		if e.err != nil {
			return nil
		}
		if sel.matchesShared(res, e) {
			return s.sendShared(evDeleted, e)
		}
	}
	return nil
}

var _ = meta.Accessor

// podsByNode is the watch index of pods by spec.nodeName.
const podsByNode = "pods/spec.nodeName"

// trigger indexes a watch of pods that selects one node (what every
// kubelet watches: fieldSelector spec.nodeName=<node>) by that node, so
// the store hands such a watch only the events of pods bound to its node
// (or leaving it), as Kubernetes' watch cache does with its pod trigger.
// The value is read from the same decoded object deliver then uses.
func (h *Handler) trigger(res *registry.Resource, sel *selection) *storage.WatchTrigger {
	if res.GroupResource() != (schema.GroupResource{Resource: "pods"}) {
		return nil
	}
	node, ok := sel.fields.RequiresExactMatch("spec.nodeName")
	if !ok {
		return nil
	}
	return &storage.WatchTrigger{Index: podsByNode, Prefix: res.NamespacePrefix(""), Value: node,
		Func: func(kv *storage.KeyValue) (string, bool) {
			e := h.events.get(res, kv, kv.Value, kv.ModRevision)
			pod, ok := e.obj.(*corev1.Pod)
			if e.err != nil || !ok {
				return "", false
			}
			return pod.Spec.NodeName, true
		}}
}
