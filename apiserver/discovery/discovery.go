package discovery

import (
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// groupOrder is the order Kubernetes lists its built-in groups in; kubectl
// resolves ambiguous short names (events, ev) in this order.
var groupOrder = []string{
	"", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
	"autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io",
	"storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
	"coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "flowcontrol.apiserver.k8s.io",
}

// Server serves discovery documents from a registry.
type Server struct {
	reg *registry.Registry
	// openapi caches the OpenAPI v3 document of each group/version (they
	// carry full schemas, so building them is not free); any change to the
	// registry drops the cache.
	openapi sync.Map // gvPath → []byte
	// mu and gen keep a document built before a registry change from
	// being cached after it.
	mu  sync.Mutex
	gen uint64
}

// New returns a discovery server for reg.
func New(reg *registry.Registry) *Server {
	s := &Server{reg: reg}
	reg.OnChange(func() {
		s.mu.Lock()
		s.gen++
		s.openapi.Clear()
		s.mu.Unlock()
	})
	return s
}

// groups returns the served groups in Kubernetes' order, then custom groups
// alphabetically.
func (s *Server) groups() []string {
	gv := s.reg.GroupVersions()
	rank := map[string]int{}
	for i, g := range groupOrder {
		rank[g] = i
	}
	var out []string
	for g := range gv {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return out[i] < out[j]
	})
	return out
}

func (s *Server) apiGroup(g string) (metav1.APIGroup, bool) {
	versions := s.reg.GroupVersions()[g]
	if len(versions) == 0 {
		return metav1.APIGroup{}, false
	}
	sortVersions(versions)
	grp := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g}
	for _, v := range versions {
		grp.Versions = append(grp.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
	}
	grp.PreferredVersion = grp.Versions[0]
	return grp, true
}

// sortVersions orders versions as Kubernetes prefers them: GA before beta
// before alpha, higher numbers first.
func sortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool { return versionRank(vs[i]) > versionRank(vs[j]) })
}

func versionRank(v string) int {
	// v1 → 3000+1, v2beta1 → 2000+..., v1alpha1 → 1000+...
	base, n := 3000, 0
	rest := strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(rest, "ab"); i >= 0 {
		if strings.HasPrefix(rest[i:], "beta") {
			base = 2000
		} else {
			base = 1000
		}
		rest = rest[:i]
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return base + n*10
}

// ServeAPIVersions serves /api: the aggregated core group when the Accept
// header asks for it, else the legacy APIVersions.
func (s *Server) ServeAPIVersions(w http.ResponseWriter, r *http.Request) {
	if v := aggregatedVersion(r.Header.Get("Accept")); v != "" {
		s.serveAggregated(w, r, true, v)
		return
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil && h == "" {
		host = r.Host
	}
	writeJSON(w, r, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: host},
		},
	})
}

// ServeAPIGroupList serves /apis: every non-core group with its resources
// when the Accept header asks for aggregated discovery, else the legacy
// APIGroupList.
func (s *Server) ServeAPIGroupList(w http.ResponseWriter, r *http.Request) {
	if v := aggregatedVersion(r.Header.Get("Accept")); v != "" {
		s.serveAggregated(w, r, false, v)
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range s.groups() {
		if g == "" {
			continue
		}
		if grp, ok := s.apiGroup(g); ok {
			list.Groups = append(list.Groups, grp)
		}
	}
	writeJSON(w, r, list)
}

// ServeAPIGroup serves /apis/<group>; ok is false for an unknown group.
func (s *Server) ServeAPIGroup(w http.ResponseWriter, r *http.Request, group string) bool {
	grp, ok := s.apiGroup(group)
	if !ok || group == "" {
		return false
	}
	writeJSON(w, r, &grp)
	return true
}

// ResourceList builds the APIResourceList of one group/version.
func (s *Server) ResourceList(group, version string) (*metav1.APIResourceList, bool) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: []metav1.APIResource{}}
	found := false
	for _, r := range s.reg.All() {
		if r.Group != group || r.Version != version {
			continue
		}
		found = true
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Name, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: r.ResourceVerbs(), ShortNames: r.ShortNames, Categories: r.Categories,
		})
		for _, sub := range subresourcesOf(r) {
			e := metav1.APIResource{Name: r.Name + "/" + sub.name, Namespaced: r.Namespaced, Kind: sub.kind.Kind, Verbs: sub.verbs}
			// Legacy discovery names the group/version only where it
			// differs from the parent's (deployments/scale → autoscaling/v1).
			if sub.kind.Group != r.Group || sub.kind.Version != r.Version {
				e.Group, e.Version = sub.kind.Group, sub.kind.Version
			}
			list.APIResources = append(list.APIResources, e)
		}
	}
	return list, found
}

// ServeResourceList serves /api/v1 or /apis/<group>/<version>; ok is false
// for a group/version that is not served.
func (s *Server) ServeResourceList(w http.ResponseWriter, r *http.Request, group, version string) bool {
	list, ok := s.ResourceList(group, version)
	if !ok {
		return false
	}
	writeJSON(w, r, list)
	return true
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	writeDocument(w, r, "application/json", v)
}
