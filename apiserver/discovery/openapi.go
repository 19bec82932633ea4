package discovery

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// The OpenAPI v3 served here is deliberately minimal: per group/version one
// document with, per kind, the object path whose PATCH operation names the
// kind (x-kubernetes-group-version-kind) and accepts fieldValidation. That
// is what kubectl checks before relying on server-side field validation.
// Component schemas of the built-in kinds are served for kubectl explain
// (schemas.go), but strategic merge patch is still not advertised: the
// schemas lack list-type markers, so kubectl keeps computing patches from
// its compiled-in types.

// gvPath is the key of a group/version in the OpenAPI v3 root ("api/v1",
// "apis/apps/v1").
func gvPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

// document returns one group/version's OpenAPI v3 document.
func (s *Server) document(group, version string) ([]byte, bool) {
	key := gvPath(group, version)
	if data, ok := s.openapi.Load(key); ok {
		return data.([]byte), true
	}
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	data, ok := s.buildDocument(group, version)
	if ok {
		s.mu.Lock()
		if s.gen == gen {
			s.openapi.Store(key, data)
		}
		s.mu.Unlock()
	}
	return data, ok
}

// buildDocument builds one group/version's OpenAPI v3 document.
func (s *Server) buildDocument(group, version string) ([]byte, bool) {
	paths := map[string]any{}
	found := false
	for _, r := range s.reg.All() {
		if r.Group != group || r.Version != version {
			continue
		}
		found = true
		base := "/" + gvPath(group, version)
		item := base + "/" + r.Name + "/{name}"
		coll := base + "/" + r.Name
		if r.Namespaced {
			item = base + "/namespaces/{namespace}/" + r.Name + "/{name}"
			coll = base + "/namespaces/{namespace}/" + r.Name
		}
		gvk := map[string]string{"group": group, "version": version, "kind": r.Kind}
		params := []any{
			map[string]any{"name": "fieldValidation", "in": "query", "schema": map[string]any{"type": "string", "uniqueItems": true}},
			map[string]any{"name": "dryRun", "in": "query", "schema": map[string]any{"type": "string", "uniqueItems": true}},
			map[string]any{"name": "fieldManager", "in": "query", "schema": map[string]any{"type": "string", "uniqueItems": true}},
		}
		resp := map[string]any{"200": map[string]any{"description": "OK"}}
		body := map[string]any{"content": map[string]any{
			"application/json-patch+json":  map[string]any{"schema": map[string]any{"type": "object"}},
			"application/merge-patch+json": map[string]any{"schema": map[string]any{"type": "object"}},
			"application/apply-patch+yaml": map[string]any{"schema": map[string]any{"type": "object"}},
		}}
		op := func(id string, withBody bool) map[string]any {
			o := map[string]any{
				"operationId":                     id + r.Kind,
				"x-kubernetes-action":             id,
				"x-kubernetes-group-version-kind": gvk,
				"parameters":                      params,
				"responses":                       resp,
			}
			if withBody {
				o["requestBody"] = body
			}
			return o
		}
		paths[item] = map[string]any{"get": op("get", false), "put": op("put", false), "patch": op("patch", true), "delete": op("delete", false)}
		paths[coll] = map[string]any{"get": op("list", false), "post": op("post", false)}
	}
	if !found {
		return nil, false
	}
	doc := map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "skiff", "version": version},
		"paths":      paths,
		"components": map[string]any{"schemas": s.schemas(group, version)},
	}
	data, err := json.Marshal(doc)
	return data, err == nil
}

// schemas are the component schemas of a group/version's built-in kinds
// and everything they refer to, each kind marked with
// x-kubernetes-group-version-kind (how kubectl explain finds it).
func (s *Server) schemas(group, version string) map[string]any {
	out := map[string]any{}
	for _, r := range s.reg.All() {
		if r.Group != group || r.Version != version {
			continue
		}
		if r.Unstructured() {
			addCustomSchema(out, r)
			continue
		}
		top, ms := modelsFor(r.New())
		for name, m := range ms {
			if _, ok := out[name]; !ok {
				out[name] = m
			}
		}
		// The cached models are shared: mark a copy.
		marked := map[string]any{}
		for k, v := range ms[top] {
			marked[k] = v
		}
		marked["x-kubernetes-group-version-kind"] = []any{map[string]string{"group": group, "version": version, "kind": r.Kind}}
		out[top] = marked
	}
	return out
}

func hashOf(data []byte) string {
	sum := sha512.Sum512(data)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// ServeOpenAPIV3 serves /openapi/v3 and /openapi/v3/<gv path>.
func (s *Server) ServeOpenAPIV3(w http.ResponseWriter, r *http.Request) {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/openapi/v3"), "/")
	if rest == "" {
		root := map[string]any{}
		for g, vs := range s.reg.GroupVersions() {
			for _, v := range vs {
				if data, ok := s.document(g, v); ok {
					p := gvPath(g, v)
					root[p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + hashOf(data)}
				}
			}
		}
		writeJSON(w, r, map[string]any{"paths": root})
		return
	}
	var group, version string
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		version = parts[1]
	case len(parts) == 3 && parts[0] == "apis":
		group, version = parts[1], parts[2]
	default:
		http.NotFound(w, r)
		return
	}
	data, ok := s.document(group, version)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", `"`+hashOf(data)+`"`)
	if r.URL.Query().Get("hash") != "" {
		w.Header().Set("Cache-Control", "public, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

var _ = registry.AllVerbs
