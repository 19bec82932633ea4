package endpoints

import (
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// patch serves PATCH in its four flavours: JSON patch, merge patch,
// strategic merge patch (built-in kinds) and server-side apply.
func (h *Handler) patch(req *request, st registry.Strategy) error {
	body, err := readBody(req)
	if err != nil {
		return err
	}
	validation, err := req.fieldValidation()
	if err != nil {
		return err
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	media := contentType(req.r.Header.Get("Content-Type"))
	if media == mediaApplyYAML {
		return h.apply(req, st, body, dry)
	}
	switch media {
	case mediaJSONPatch, mediaMergePatch:
	case mediaStrategic:
		if req.res.Unstructured() {
			return unsupportedPatch(media)
		}
	default:
		return unsupportedPatch(media)
	}
	gvk := req.res.GVK()
	out, err := h.guaranteedUpdate(req, st, req.info.Name, dry, func(cur runtime.Object) (runtime.Object, error) {
		curJSON, err := encodeObject(cur)
		if err != nil {
			return nil, errors.NewInternalError(err)
		}
		patched, err := applyPatch(req.res, media, curJSON, body)
		if err != nil {
			return nil, err
		}
		d, err := decodeJSONObject(req.res, gvk, patched, validation)
		if err != nil {
			return nil, err
		}
		req.warnings = d.warnings
		if err := h.pruneUnknown(req, d.obj, validation); err != nil {
			return nil, err
		}
		return d.obj, nil
	}, nil)
	if err != nil {
		return err
	}
	return h.respond(req, http.StatusOK, out.obj)
}

func unsupportedPatch(media string) error {
	return &errors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got %q)", media),
	}}
}

// applyPatch applies a non-apply patch to an object's JSON.
func applyPatch(res *registry.Resource, media string, cur, patch []byte) ([]byte, error) {
	switch media {
	case mediaJSONPatch:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, errors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		if err := checkJSONPatch(p); err != nil {
			return nil, err
		}
		out, err := applyJSONPatch(p, cur)
		if err != nil {
			return nil, errPatch(res, err)
		}
		return out, nil
	case mediaMergePatch:
		out, err := jsonpatch.MergePatch(cur, patch)
		if err != nil {
			return nil, errors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		return out, nil
	case mediaStrategic:
		out, err := strategicpatch.StrategicMergePatch(cur, patch, res.New())
		if err != nil {
			return nil, errPatch(res, err)
		}
		return out, nil
	}
	return nil, unsupportedPatch(media)
}

func errPatch(res *registry.Resource, err error) error {
	return errors.NewBadRequest(fmt.Sprintf("error applying patch to %s: %v", res.Kind, err))
}

// apply serves server-side apply: structured-merge-diff with managedFields,
// creating the object when it does not exist.
func (h *Handler) apply(req *request, st registry.Strategy, body []byte, dry bool) error {
	manager := req.query("fieldManager")
	if manager == "" {
		return errors.NewBadRequest("PATCH requests with apply content type must have a fieldManager")
	}
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return errors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	applied := &unstructured.Unstructured{}
	if err := applied.UnmarshalJSON(data); err != nil {
		return errors.NewBadRequest(fmt.Sprintf("error decoding apply configuration: %v", err))
	}
	gvk := req.res.GVK()
	if got := applied.GroupVersionKind(); got != gvk {
		return mismatch(gvk, got)
	}
	if applied.GetName() != req.info.Name {
		return errors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", applied.GetName(), req.info.Name))
	}
	if req.res.Namespaced && applied.GetNamespace() != "" && applied.GetNamespace() != req.info.Namespace {
		return errors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if p, ok := req.res.Strategy.(registry.UnknownFieldPruner); ok {
		p.PruneUnknown(applied)
	}
	fm, err := h.fms.get(req.res, subresourceForFields(req))
	if err != nil {
		return errors.NewInternalError(err)
	}
	force := req.query("force") == "true"
	out, err := h.guaranteedUpdate(req, st, req.info.Name, dry, func(cur runtime.Object) (runtime.Object, error) {
		obj, err := fm.Apply(cur.DeepCopyObject(), applied.DeepCopy(), manager, force)
		if err != nil {
			return nil, applyError(err)
		}
		return obj, nil
	}, func() (runtime.Object, runtime.Object, error) {
		if req.info.Subresource != "" {
			// Kubernetes' subresource storage (status, scale) updates
			// only what exists: no object is made of its status.
			return nil, nil, errors.NewNotFound(req.res.GroupResource(), req.info.Name)
		}
		// The apply creates the object: as Kubernetes, that takes leave to
		// create as well as to patch it.
		if err := h.authorizeVerb(req, "create"); err != nil {
			return nil, nil, err
		}
		blank := newObject(req.res)
		m := accessor(blank)
		m.SetName(req.info.Name)
		m.SetNamespace(req.info.Namespace)
		return blank, applied.DeepCopy(), nil
	})
	if err != nil {
		return err
	}
	code := http.StatusOK
	if out.created {
		code = http.StatusCreated
	}
	return h.respond(req, code, out.obj)
}

// applyError keeps the Status of apply conflicts (409 with causes).
func applyError(err error) error {
	if _, ok := err.(errors.APIStatus); ok {
		return err
	}
	return errors.NewBadRequest(err.Error())
}

// checkJSONPatch refuses operations that need a value and have none: the
// json-patch library dereferences the missing value (found by
// FuzzDecodePatch: [{"op":"replace","path":""}]).
func checkJSONPatch(p jsonpatch.Patch) error {
	for i, op := range p {
		switch kind := op.Kind(); kind {
		case "add", "replace", "test":
			v, ok := op["value"]
			path, _ := op.Path()
			// "value": null is a value (JSON null), except for the whole
			// document, which must stay an object.
			if !ok || (v == nil && path == "") {
				return errors.NewBadRequest(fmt.Sprintf("error decoding patch: operation %d (%s) has no value", i, kind))
			}
		}
	}
	return nil
}

// applyJSONPatch applies p, turning a panic inside the library into an
// error: a request must never take the handler down.
func applyJSONPatch(p jsonpatch.Patch, cur []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the patch could not be applied: %v", r)
		}
	}()
	return p.Apply(cur)
}
