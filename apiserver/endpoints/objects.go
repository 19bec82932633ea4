package endpoints

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// newObject returns an empty object of the resource's kind.
func newObject(res *registry.Resource) runtime.Object {
	if res.Unstructured() {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(res.GVK())
		return u
	}
	obj := res.New()
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	return obj
}

// newList returns an empty list of the resource's kind.
func newList(res *registry.Resource) runtime.Object {
	if res.Unstructured() {
		l := &unstructured.UnstructuredList{Object: map[string]any{}}
		l.SetGroupVersionKind(res.GroupVersion().WithKind(res.ListKind))
		return l
	}
	l := res.NewList()
	l.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.ListKind))
	return l
}

// decodeStored turns a stored value into an object whose resourceVersion is
// the revision rv (the key's ModRevision, or a deleting revision).
func decodeStored(res *registry.Resource, value []byte, rv int64) (runtime.Object, error) {
	sf := res.Stored
	var obj runtime.Object
	if sf != nil {
		obj = sf.New()
	} else {
		obj = newObject(res)
	}
	if err := jsonUnmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", res.Kind, err)
	}
	if sf != nil {
		var err error
		if obj, err = sf.FromStored(obj); err != nil {
			return nil, err
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	return obj, nil
}

// decodeKV is decodeStored for a KeyValue.
func decodeKV(res *registry.Resource, kv *storage.KeyValue) (runtime.Object, error) {
	return decodeStored(res, kv.Value, kv.ModRevision)
}

// encodeStored renders an object of res for storage, in the resource's
// stored kind. The resourceVersion is not stored: it is the key's
// revision, set on every read.
func encodeStored(res *registry.Resource, obj runtime.Object) ([]byte, error) {
	if sf := res.Stored; sf != nil {
		stored, err := sf.ToStored(obj)
		if err != nil {
			return nil, err
		}
		obj = stored
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	return encodeObject(obj)
}

// wholeSecondsNow is the time a server-set metav1.Time gets: what storing
// it keeps (whole seconds, in the local zone as decoding gives it), so the
// object written and the object read back are equal, even to
// reflect.DeepEqual (see pruneUnchanged).
func wholeSecondsNow() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// accessor is meta.Accessor for objects known to have metadata.
func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("endpoints: object %T has no metadata: %v", obj, err)) // only registry kinds reach here
	}
	return m
}

// parseRV parses a resourceVersion; "" and "0" are 0.
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid resource version %q", s)
	}
	return n, nil
}
