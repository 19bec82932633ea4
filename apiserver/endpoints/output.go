package endpoints

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// outputKind is what the client's Accept header asked for.
type outputKind int

const (
	outObject outputKind = iota
	outTable
	outPartial // PartialObjectMetadata(List)
)

// encoding is the wire format of a reply.
type encoding int

const (
	encJSON encoding = iota
	encProtobuf
)

// negotiate picks the reply form and encoding from the Accept header,
// trying media ranges in order as Kubernetes does. typed says whether the
// resource's objects have a protobuf form (built-in kinds; custom resources
// do not). Like Kubernetes: Tables are JSON only; PartialObjectMetadata has
// a protobuf form for every resource; a custom resource asked for in
// protobuf alone is 406 Not Acceptable.
func negotiate(accept string, typed bool) (outputKind, encoding, error) {
	if strings.TrimSpace(accept) == "" {
		return outObject, encJSON, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		enc := encJSON
		switch mt {
		case mediaJSON, mediaYAML, "*/*", "application/*":
		case mediaProtobuf:
			enc = encProtobuf
		default:
			continue
		}
		as, g, v := params["as"], params["g"], params["v"]
		metaV := g == "meta.k8s.io" && (v == "v1" || v == "v1beta1")
		switch {
		case as == "":
			if mt == mediaYAML || (enc == encProtobuf && !typed) {
				// We reply YAML requests in JSON below, only when
				// nothing better is listed.
				continue
			}
			return outObject, enc, nil
		case metaV && as == "Table":
			if enc == encProtobuf {
				continue
			}
			return outTable, encJSON, nil
		case metaV && (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList"):
			return outPartial, enc, nil
		}
	}
	// A client that listed only YAML gets JSON, which is YAML too.
	if strings.Contains(accept, mediaYAML) {
		return outObject, encJSON, nil
	}
	return outObject, encJSON, notAcceptable(accept)
}

// statusEncoding is the encoding of replies that are not the resource's
// objects (Status, Scale): the first of JSON or protobuf the Accept header
// lists, as Kubernetes negotiates errors.
func statusEncoding(accept string) encoding {
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case mediaProtobuf:
			return encProtobuf
		case mediaJSON, mediaYAML, "*/*", "application/*":
			return encJSON
		}
	}
	return encJSON
}

// respond sends a single object or list in the negotiated form.
func (h *Handler) respond(req *request, code int, obj runtime.Object) error {
	kind, enc, err := negotiate(req.r.Header.Get("Accept"), !req.res.Unstructured())
	if err != nil {
		return err
	}
	out, err := h.transform(req, kind, obj)
	if err != nil {
		return err
	}
	writeEncoded(req.w, code, out, req.warnings, enc)
	return nil
}

// reply sends an object that is not the resource's own (Scale, a success
// Status) in JSON or protobuf as the client prefers.
func (req *request) reply(code int, obj runtime.Object) {
	writeEncoded(req.w, code, obj, req.warnings, statusEncoding(req.r.Header.Get("Accept")))
}

// fail sends an error Status in JSON or protobuf as the client prefers.
func (req *request) fail(err error) {
	writeErrorAs(req.w, err, req.warnings, statusEncoding(req.r.Header.Get("Accept")))
}

// transform converts obj to the negotiated form.
func (h *Handler) transform(req *request, kind outputKind, obj runtime.Object) (runtime.Object, error) {
	switch kind {
	case outTable:
		return h.toTable(req, obj)
	case outPartial:
		return toPartial(obj)
	}
	return obj, nil
}

// toTable converts obj (object or list) into a meta.k8s.io/v1 Table whose
// rows carry the object as includeObject asks.
func (h *Handler) toTable(req *request, obj runtime.Object) (*metav1.Table, error) {
	include := req.query("includeObject")
	switch include {
	case "", "Metadata", "None", "Object":
	default:
		return nil, errors.NewBadRequest(fmt.Sprintf("includeObject must be one of None, Metadata or Object, got %q", include))
	}
	conv := req.res.Table
	if conv == nil {
		conv = registry.DefaultTable
	}
	policy := metav1.IncludeObjectPolicy(include)
	if policy == "" {
		policy = metav1.IncludeMetadata
	}
	t, err := conv(obj, policy)
	if err != nil {
		return nil, errors.NewInternalError(fmt.Errorf("converting to table: %w", err))
	}
	t.Kind, t.APIVersion = "Table", "meta.k8s.io/v1"
	if meta.IsListType(obj) {
		if lm, err := meta.ListAccessor(obj); err == nil {
			t.ResourceVersion = lm.GetResourceVersion()
			t.Continue = lm.GetContinue()
			t.RemainingItemCount = lm.GetRemainingItemCount()
		}
	} else if m, err := meta.Accessor(obj); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}
	if req.query("noHeaders") == "true" {
		t.ColumnDefinitions = nil
	}
	for i := range t.Rows {
		row := &t.Rows[i]
		o := row.Object.Object
		if o == nil {
			continue
		}
		switch include {
		case "None":
			row.Object = runtime.RawExtension{}
		case "Object":
		default:
			p, err := partialOf(o)
			if err != nil {
				return nil, errors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Object: p}
		}
	}
	return t, nil
}

// partialOf returns an object's PartialObjectMetadata.
func partialOf(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	om, err := objectMetaOf(obj)
	if err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: om,
	}, nil
}

// toPartial converts an object or list to PartialObjectMetadata(List).
func toPartial(obj runtime.Object) (runtime.Object, error) {
	if !meta.IsListType(obj) {
		return partialOf(obj)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, errors.NewInternalError(err)
	}
	out := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}}
	if lm, err := meta.ListAccessor(obj); err == nil {
		out.ResourceVersion, out.Continue = lm.GetResourceVersion(), lm.GetContinue()
	}
	for _, it := range items {
		p, err := partialOf(it)
		if err != nil {
			return nil, errors.NewInternalError(err)
		}
		out.Items = append(out.Items, *p)
	}
	return out, nil
}

// objectMetaOf returns a copy of an object's ObjectMeta.
func objectMetaOf(obj runtime.Object) (metav1.ObjectMeta, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		var om metav1.ObjectMeta
		m, _ := u.Object["metadata"].(map[string]any)
		if m == nil {
			return om, nil
		}
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &om)
		return om, err
	}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		return *a.GetObjectMeta().(*metav1.ObjectMeta).DeepCopy(), nil
	}
	return metav1.ObjectMeta{}, fmt.Errorf("%T has no ObjectMeta", obj)
}

// statusSuccess is the Status some verbs reply with (binding, eviction).
func statusSuccess(code int) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
}

var _ = http.StatusOK
