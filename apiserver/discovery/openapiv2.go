package discovery

import (
	"encoding/json"
	"net/http"
	"strings"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

// OpenAPI v2 exists for older kubectl (≤1.28), whose apply reads
// /openapi/v2 before anything else and gives up on a 404. Like the v3
// document it carries paths only: per kind, a PATCH operation naming the
// kind and accepting fieldValidation. With no definitions, kubectl computes
// patches from its compiled-in types and leaves validation to the server.

func (s *Server) v2Document() map[string]any {
	paths := map[string]any{}
	for _, r := range s.reg.All() {
		base := "/" + gvPath(r.Group, r.Version)
		item := base + "/" + r.Name + "/{name}"
		if r.Namespaced {
			item = base + "/namespaces/{namespace}/" + r.Name + "/{name}"
		}
		paths[item] = map[string]any{"patch": map[string]any{
			"operationId": "patch" + r.Kind + r.Version,
			"consumes":    []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"},
			"produces":    []string{"application/json"},
			"parameters": []any{
				map[string]any{"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true},
				map[string]any{"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true},
			},
			"responses":                       map[string]any{"200": map[string]any{"description": "OK"}},
			"x-kubernetes-action":             "patch",
			"x-kubernetes-group-version-kind": map[string]string{"group": r.Group, "version": r.Version, "kind": r.Kind},
		}}
	}
	return map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": "skiff", "version": "v2"},
		"paths":       paths,
		"definitions": map[string]any{},
	}
}

// ServeOpenAPIV2 serves /openapi/v2 as JSON, or as gnostic protobuf when
// the client asks for it (kubectl does).
func (s *Server) ServeOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	data, err := json.Marshal(s.v2Document())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "protobuf") {
		doc, err := openapiv2.ParseDocument(data)
		if err == nil {
			var pb []byte
			if pb, err = proto.Marshal(doc); err == nil {
				w.Header().Set("Content-Type", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
				w.Header().Set("Etag", `"`+hashOf(pb)+`"`)
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write(pb)
				return
			}
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hashOf(data)+`"`)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}
