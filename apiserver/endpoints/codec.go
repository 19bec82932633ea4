package endpoints

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// Media types the server reads and writes.
const (
	mediaJSON        = "application/json"
	mediaYAML        = "application/yaml"
	mediaProtobuf    = "application/vnd.kubernetes.protobuf"
	mediaJSONPatch   = "application/json-patch+json"
	mediaMergePatch  = "application/merge-patch+json"
	mediaStrategic   = "application/strategic-merge-patch+json"
	mediaApplyYAML   = "application/apply-patch+yaml"
	mediaApplyCBOR   = "application/apply-patch+cbor"
	fieldValidStrict = "Strict"
	fieldValidWarn   = "Warn"
	fieldValidIgnore = "Ignore"
)

// Scheme knows every built-in type plus the meta.k8s.io types (Table,
// PartialObjectMetadata) the server replies with.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("endpoints: building scheme: %v", err)) // programming error at init
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("endpoints: building scheme: %v", err))
	}
	metav1.AddMetaToScheme(s)
	return s
}

var (
	strictJSON = json.NewSerializerWithOptions(json.DefaultMetaFactory, Scheme, Scheme, json.SerializerOptions{Strict: true})
	plainJSON  = json.NewSerializerWithOptions(json.DefaultMetaFactory, Scheme, Scheme, json.SerializerOptions{})
	protoCodec = protobuf.NewSerializer(Scheme, Scheme)
)

// contentType returns the bare media type of a Content-Type header.
func contentType(header string) string {
	if header == "" {
		return mediaJSON
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return strings.TrimSpace(strings.SplitN(header, ";", 2)[0])
	}
	return mt
}

// decoded is a request body turned into an object.
type decoded struct {
	obj      runtime.Object
	warnings []string
}

// toJSON turns a JSON or YAML body into JSON; other media types are refused.
func toJSON(media string, body []byte) ([]byte, error) {
	switch media {
	case mediaJSON, mediaJSONPatch, mediaMergePatch, mediaStrategic:
		return body, nil
	case mediaYAML, mediaApplyYAML, "application/x-yaml", "text/yaml":
		out, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, unsupportedMedia(media)
}

// decodeObject decodes a create/update body for resource r, enforcing the
// fieldValidation directive and that apiVersion/kind (when given) match.
func decodeObject(r *registry.Resource, gvk schema.GroupVersionKind, media string, body []byte, validation string) (*decoded, error) {
	if media == mediaProtobuf {
		if r.Unstructured() {
			return nil, unsupportedMedia(media)
		}
		into := r.New()
		obj, actual, err := protoCodec.Decode(body, nil, into)
		if err != nil {
			return nil, errors.NewBadRequest(cannotHandle(gvk, err))
		}
		if actual != nil && (actual.Kind != "" && actual.Kind != gvk.Kind || actual.Version != "" && actual.GroupVersion() != gvk.GroupVersion()) {
			return nil, mismatch(gvk, *actual)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return &decoded{obj: obj}, nil
	}
	data, err := toJSON(media, body)
	if err != nil {
		if errors.IsUnsupportedMediaType(err) {
			return nil, err
		}
		return nil, errors.NewBadRequest(cannotHandle(gvk, err))
	}
	return decodeJSONObject(r, gvk, data, validation)
}

// decodeJSONObject decodes JSON (a body, or a patched object) for resource r.
func decodeJSONObject(r *registry.Resource, gvk schema.GroupVersionKind, data []byte, validation string) (*decoded, error) {
	tm, err := json.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return nil, errors.NewBadRequest(cannotHandle(gvk, err))
	}
	if tm.Kind != "" || tm.Version != "" {
		if (tm.Kind != "" && tm.Kind != gvk.Kind) || (tm.Version != "" && tm.GroupVersion() != gvk.GroupVersion()) {
			return nil, mismatch(gvk, *tm)
		}
	}
	if r.Unstructured() {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(withTypeMeta(data, gvk)); err != nil {
			return nil, errors.NewBadRequest(cannotHandle(gvk, err))
		}
		u.SetGroupVersionKind(gvk)
		return &decoded{obj: u}, nil
	}
	obj, _, err := strictJSON.Decode(data, &gvk, r.New())
	var warnings []string
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, errors.NewBadRequest(cannotHandle(gvk, err))
		}
		switch validation {
		case fieldValidStrict:
			return nil, errors.NewBadRequest(cannotHandle(gvk, err))
		case fieldValidWarn, "":
			if se, ok := runtime.AsStrictDecodingError(err); ok {
				for _, e := range se.Errors() {
					warnings = append(warnings, e.Error())
				}
			}
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return &decoded{obj: obj, warnings: warnings}, nil
}

// withTypeMeta fills apiVersion/kind into a JSON object that omits them, so
// the unstructured decoder accepts it.
func withTypeMeta(data []byte, gvk schema.GroupVersionKind) []byte {
	tm, err := json.DefaultMetaFactory.Interpret(data)
	if err == nil && tm.Kind != "" && tm.Version != "" {
		return data
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil || m == nil {
		return data
	}
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = gvk.GroupVersion().String()
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = gvk.Kind
	}
	out, err := encodeJSONValue(m)
	if err != nil {
		return data
	}
	return out
}

func cannotHandle(gvk schema.GroupVersionKind, err error) string {
	return fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err)
}

func mismatch(want schema.GroupVersionKind, got schema.GroupVersionKind) error {
	if got.Kind != "" && got.Kind != want.Kind {
		return errors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, want.Kind))
	}
	return errors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion().String(), want.GroupVersion().String()))
}

// decodeOptions decodes a small options body (DeleteOptions, Scale,
// Binding, Eviction) in JSON, YAML or protobuf. An empty body is fine.
func decodeOptions(media string, body []byte, into runtime.Object) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if media == mediaProtobuf {
		_, _, err := protoCodec.Decode(body, nil, into)
		if err != nil {
			return errors.NewBadRequest(fmt.Sprintf("cannot decode body: %v", err))
		}
		return nil
	}
	data, err := toJSON(media, body)
	if err != nil {
		if errors.IsUnsupportedMediaType(err) {
			return err
		}
		return errors.NewBadRequest(fmt.Sprintf("cannot decode body: %v", err))
	}
	if _, _, err := plainJSON.Decode(data, nil, into); err != nil {
		// DeleteOptions bodies often omit kind; decode into the typed value.
		if err2 := jsonUnmarshal(data, into); err2 != nil {
			return errors.NewBadRequest(fmt.Sprintf("cannot decode body: %v", err2))
		}
	}
	return nil
}

// encodeBuffers are scratch buffers for encodeObject: the encoders write
// into a buffer that has grown to the size of earlier objects, and the
// result is one copy of the exact size, not the several copies a buffer
// growing from empty makes of every object.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer is the largest scratch buffer kept for reuse; the rare
// bigger object does not pin its memory.
const maxPooledBuffer = 256 << 10

// encodeObject renders an object as JSON, with apiVersion and kind set.
func encodeObject(obj runtime.Object) ([]byte, error) {
	buf := encodeBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			encodeBuffers.Put(buf)
		}
	}()
	if u, ok := obj.(runtime.Unstructured); ok {
		if err := unstructured.UnstructuredJSONScheme.Encode(u.(runtime.Object), buf); err != nil {
			return nil, err
		}
		return bytes.Clone(buf.Bytes()), nil
	}
	if err := plainJSON.Encode(obj, buf); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// encodeProtobuf renders an object in Kubernetes' protobuf envelope
// ("k8s\x00" + runtime.Unknown), with apiVersion and kind from the object.
// It fails for objects without a protobuf form (unstructured ones).
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return nil, fmt.Errorf("%T has no protobuf form", obj)
	}
	var w ownedWriter
	if err := protoCodec.EncodeWithAllocator(obj, &w, &w); err != nil {
		return nil, err
	}
	return w.out, nil
}

// ownedWriter is the protobuf serializer's memory allocator and writer at
// once: the serializer marshals the object into one buffer sized for it,
// which it asks this allocator for, and writes that buffer out. Since the
// buffer is this call's own, the writer keeps it as the result instead of
// copying it into another (as a bytes.Buffer would, growing to the
// object's size). Anything else written is appended.
type ownedWriter struct {
	alloc []byte // the buffer handed to the serializer
	out   []byte
}

func (w *ownedWriter) Allocate(n uint64) []byte {
	w.alloc = make([]byte, n)
	return w.alloc
}

func (w *ownedWriter) Write(p []byte) (int, error) {
	if w.out == nil && len(p) > 0 && len(w.alloc) > 0 && &p[0] == &w.alloc[0] {
		w.out = p[:len(p):len(p)]
		return len(p), nil
	}
	w.out = append(w.out, p...)
	return len(p), nil
}
