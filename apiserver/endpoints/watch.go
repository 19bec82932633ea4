package endpoints

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// watchStream writes watch events as newline-separated JSON, one flush per event.
type watchStream struct {
	h    *Handler
	req  *request
	kind outputKind
	w    http.ResponseWriter
	fl   http.Flusher
}

func (s *watchStream) send(typ string, obj runtime.Object) error {
	out, err := s.h.transform(s.req, s.kind, obj)
	if err != nil {
		return err
	}
	data, err := encodeObject(out)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Grow(len(data) + 32)
	buf.WriteString(`{"type":"`)
	buf.WriteString(typ)
	buf.WriteString(`","object":`)
	buf.Write(data)
	buf.WriteString("}\n")
	if _, err := s.w.Write(buf.Bytes()); err != nil {
		return err
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
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
	data, err := encodeObject(obj)
	if err != nil {
		return err
	}
	line := append(append([]byte(`{"type":"BOOKMARK","object":`), data...), "}\n"...)
	if _, err := s.w.Write(line); err != nil {
		return err
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
}

func (s *watchStream) sendError(err error) {
	st := asStatus(err)
	data, e := encodeObject(&st)
	if e != nil {
		return
	}
	_, _ = s.w.Write(append(append([]byte(`{"type":"ERROR","object":`), data...), "}\n"...))
	if s.fl != nil {
		s.fl.Flush()
	}
}

// watch serves ?watch=true: optional initial events, then every change.
func (h *Handler) watch(req *request) error {
	sel, err := parseSelection(req)
	if err != nil {
		return err
	}
	kind, err := negotiate(req.r.Header.Get("Accept"))
	if err != nil {
		return err
	}
	rvParam, match := req.query("resourceVersion"), req.query("resourceVersionMatch")
	rv, err := parseRV(rvParam)
	if err != nil {
		return errors.NewBadRequest(err.Error())
	}
	bookmarks := req.query("allowWatchBookmarks") == "true"
	sendInitial := false
	switch req.query("sendInitialEvents") {
	case "true":
		if match != "NotOlderThan" {
			return errors.NewInvalid(metaListOptionsKind, "", invalidField("resourceVersionMatch", match, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
		if !bookmarks {
			return errors.NewInvalid(metaListOptionsKind, "", invalidField("allowWatchBookmarks", "false", "sendInitialEvents requires allowWatchBookmarks=true"))
		}
		sendInitial = true
	case "false", "":
		if match != "" {
			return errors.NewInvalid(metaListOptionsKind, "", invalidField("resourceVersionMatch", match, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		// Legacy semantics: "" and "0" start with the current state.
		sendInitial = req.query("sendInitialEvents") == "" && rv == 0
	default:
		return errors.NewBadRequest("sendInitialEvents must be true or false")
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

	prefix := listPrefix(req.res, req.info.Namespace, sel)
	start := rv
	var initial *listed
	if sendInitial {
		initial, err = h.collect(req, prefix, sel, 0, "", 0)
		if err != nil {
			return storeError(err, req.res.GroupResource(), "")
		}
		start = initial.revision
		if rv > 0 && start < rv {
			return errors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, start), 1)
		}
	}
	if start == 0 {
		if start, err = h.store.Revision(ctx); err != nil {
			return storeError(err, req.res.GroupResource(), "")
		}
	}
	w, err := h.store.Watch(ctx, storage.WatchOptions{Prefix: prefix, AfterRevision: start, ProgressNotify: bookmarks})
	if err != nil {
		if stderrors.Is(err, storage.ErrCompacted) {
			return errors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rv))
		}
		return storeError(err, req.res.GroupResource(), "")
	}
	defer w.Stop()

	setWarnings(req.w, req.warnings)
	req.w.Header().Set("Content-Type", mediaJSON)
	req.w.Header().Set("Cache-Control", "no-cache, private")
	req.w.WriteHeader(http.StatusOK)
	fl, _ := req.w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	s := &watchStream{h: h, req: req, kind: kind, w: req.w, fl: fl}
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
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events():
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
			if err := h.deliver(s, sel, ev, bookmarks); err != nil {
				return nil
			}
		}
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
		obj, err := decodeKV(res, ev.KV)
		if err != nil {
			return nil
		}
		if sel.matches(res, obj) {
			return s.send(evAdded, obj)
		}
	case storage.Updated:
		obj, err := decodeKV(res, ev.KV)
		if err != nil {
			return nil
		}
		now := sel.matches(res, obj)
		before := now
		if !sel.everything() && ev.PrevKV != nil {
			if old, err := decodeKV(res, ev.PrevKV); err == nil {
				before = sel.matches(res, old)
			}
		}
		switch {
		case now && before:
			return s.send(evModified, obj)
		case now:
			return s.send(evAdded, obj)
		case before:
			return s.send(evDeleted, obj)
		}
	case storage.Deleted:
		value := ev.KV.Value
		if len(value) == 0 && ev.PrevKV != nil {
			value = ev.PrevKV.Value
		}
		obj, err := decodeStored(res, value, ev.Revision)
		if err != nil {
			return nil
		}
		if sel.matches(res, obj) {
			return s.send(evDeleted, obj)
		}
	}
	return nil
}

var _ = meta.Accessor
