package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// Aggregated discovery answers /api and /apis with every group, version and
// resource in one document when the client's Accept names it, saving kubectl
// one request per group/version. kubectl ≤1.29 and client-go ≤0.29 ask for
// v2beta1, later ones for v2; both versions have the same shape.
const (
	discoveryGroup = "apidiscovery.k8s.io"
	discoveryKind  = "APIGroupDiscoveryList"
)

// aggregatedVersion returns the apidiscovery version ("v2", "v2beta1") the
// Accept header asks for, or "" when it prefers legacy discovery. Media
// ranges are tried in order, as Kubernetes does; the first one the server
// can answer wins.
func aggregatedVersion(accept string) string {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] == "" {
			switch mt {
			case "application/json", "application/*", "*/*":
				// Plain JSON: legacy discovery.
				return ""
			}
			continue
		}
		if mt != "application/json" || params["g"] != discoveryGroup || params["as"] != discoveryKind {
			continue
		}
		switch params["v"] {
		case "v2", "v2beta1":
			return params["v"]
		}
	}
	return ""
}

// mediaTypeFor is the exact Content-Type client-go compares the reply with.
func mediaTypeFor(version string) string {
	return "application/json;g=" + discoveryGroup + ";v=" + version + ";as=" + discoveryKind
}

// subresource is one entry below a resource, shared by legacy and
// aggregated discovery so both always list the same things.
type subresource struct {
	name  string
	kind  metav1.GroupVersionKind
	verbs []string
}

// subresourcesOf lists what is served below an object of r.
func subresourcesOf(r *registry.Resource) []subresource {
	own := metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	var out []subresource
	add := func(name string, kind metav1.GroupVersionKind, verbs ...string) {
		out = append(out, subresource{name: name, kind: kind, verbs: verbs})
	}
	if r.Subresources.Status {
		add("status", own, "get", "patch", "update")
	}
	if r.Subresources.Scale != nil {
		add("scale", metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, "get", "patch", "update")
	}
	if r.Subresources.Finalize {
		add("finalize", own, "update")
	}
	if r.Subresources.Binding {
		add("binding", metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}, "create")
	}
	if r.Subresources.Eviction {
		add("eviction", metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, "create")
	}
	return out
}

// aggregated builds the APIGroupDiscoveryList of the core group (core=true,
// for /api) or of every other group (for /apis).
func (s *Server) aggregated(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	byGV := map[string]map[string][]*registry.Resource{}
	for _, r := range s.reg.All() {
		if (r.Group == "") != core {
			continue
		}
		if byGV[r.Group] == nil {
			byGV[r.Group] = map[string][]*registry.Resource{}
		}
		byGV[r.Group][r.Version] = append(byGV[r.Group][r.Version], r)
	}
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: discoveryKind, APIVersion: discoveryGroup + "/v2"},
		Items:    []apidiscoveryv2.APIGroupDiscovery{},
	}
	for _, g := range s.groups() {
		versions, ok := byGV[g]
		if !ok {
			continue
		}
		var names []string
		for v := range versions {
			names = append(names, v)
		}
		sortVersions(names)
		grp := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g}}
		for _, v := range names {
			ver := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			rs := versions[v]
			sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
			for _, r := range rs {
				ver.Resources = append(ver.Resources, resourceDiscovery(r))
			}
			grp.Versions = append(grp.Versions, ver)
		}
		list.Items = append(list.Items, grp)
	}
	return list
}

func resourceDiscovery(r *registry.Resource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	d := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.Name,
		ResponseKind:     &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind},
		Scope:            scope,
		SingularResource: r.Singular,
		Verbs:            r.ResourceVerbs(),
		ShortNames:       r.ShortNames,
		Categories:       r.Categories,
	}
	for _, sub := range subresourcesOf(r) {
		kind := sub.kind
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub.name, ResponseKind: &kind, Verbs: sub.verbs,
		})
	}
	return d
}

// serveAggregated writes the aggregated document in the asked version.
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, core bool, version string) {
	list := s.aggregated(core)
	var v any = list
	if version == "v2beta1" {
		beta, err := toV2beta1(list)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		v = beta
	}
	writeDocument(w, r, mediaTypeFor(version), v)
}

// toV2beta1 converts a v2 list to v2beta1. The two versions have the same
// fields, so the JSON form of one is the JSON form of the other.
func toV2beta1(list *apidiscoveryv2.APIGroupDiscoveryList) (*apidiscoveryv2beta1.APIGroupDiscoveryList, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	out.APIVersion = discoveryGroup + "/v2beta1"
	return out, nil
}

// writeDocument writes a discovery document with an ETag, answering 304 when
// the client already holds it (helm and client-go revalidate this way). The
// reply varies by Accept, since /api and /apis have two forms.
func writeDocument(w http.ResponseWriter, r *http.Request, contentType string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(append([]byte(contentType+"\n"), data...))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Vary", "Accept")
	h.Set("ETag", etag)
	if r != nil && r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	if r != nil && r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}
