package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

const aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
const aggregatedV2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

// gadgetCRD is a custom resource with status and scale subresources, so
// discovery has to list them for a CRD as well as for built-ins.
func createGadgetCRD(t *testing.T, srv *apiservertest.Running) {
	t.Helper()
	createCRD(t, srv, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "shortNames": []any{"gd"}, "categories": []any{"all"}},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}, "scale": map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"})
}

// createCRD creates the CustomResourceDefinition crd and waits until the
// server serves gvr, one of its versions.
func createCRD(t *testing.T, srv *apiservertest.Running, crd map[string]any, gvr schema.GroupVersionResource) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	crdGVR := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	if _, err := dyn.Resource(crdGVR).Create(context.Background(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := srv.Server.Registry().Get(gvr); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became served", gvr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAggregatedDiscovery checks /api and /apis answer aggregated discovery
// in v2 and v2beta1 with the exact media type clients compare, legacy
// discovery otherwise, and that client-go's aggregated and legacy paths
// find the same resources, subresources of a CRD included.
func TestAggregatedDiscovery(t *testing.T) {
	srv := apiservertest.Start(t)
	createGadgetCRD(t, srv)
	c := newClient(t, srv)

	for _, tc := range []struct {
		accept, wantType, wantKind string
	}{
		{aggregatedV2 + ",application/json", aggregatedV2, "APIGroupDiscoveryList"},
		{aggregatedV2 + ";profile=nopeer," + aggregatedV2 + ",application/json", aggregatedV2, "APIGroupDiscoveryList"},
		{aggregatedV2beta1 + ",application/json", aggregatedV2beta1, "APIGroupDiscoveryList"},
		{aggregatedV2 + "," + aggregatedV2beta1 + ",application/json", aggregatedV2, "APIGroupDiscoveryList"},
		{"application/json", "application/json", ""},
		{"", "application/json", ""},
		{"application/json," + aggregatedV2, "application/json", ""},
		{"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "application/json", ""},
	} {
		for _, path := range []string{"/api", "/apis"} {
			resp, data := c.do(http.MethodGet, path, "", nil, "Accept", tc.accept)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s (Accept %q): %d %s", path, tc.accept, resp.StatusCode, data)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.wantType {
				t.Errorf("GET %s (Accept %q): Content-Type %q, want %q", path, tc.accept, got, tc.wantType)
			}
			var tm metav1.TypeMeta
			_ = json.Unmarshal(data, &tm)
			want := tc.wantKind
			if want == "" {
				want = map[string]string{"/api": "APIVersions", "/apis": "APIGroupList"}[path]
			}
			if tm.Kind != want {
				t.Errorf("GET %s (Accept %q): kind %q, want %q", path, tc.accept, tm.Kind, want)
			}
			if tc.wantKind != "" {
				v := tc.wantType[strings.Index(tc.wantType, ";v=")+3 : strings.LastIndex(tc.wantType, ";as=")]
				if tm.APIVersion != "apidiscovery.k8s.io/"+v {
					t.Errorf("GET %s (Accept %q): apiVersion %q", path, tc.accept, tm.APIVersion)
				}
			}
		}
	}

	// The aggregated /api holds the core group only; /apis every other group.
	_, data := c.do(http.MethodGet, "/api", "", nil, "Accept", aggregatedV2)
	var core apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(data, &core); err != nil {
		t.Fatal(err)
	}
	if len(core.Items) != 1 || core.Items[0].Name != "" || core.Items[0].Versions[0].Version != "v1" {
		t.Fatalf("aggregated /api: want the core group alone, got %s", data)
	}
	pods := findResource(core.Items[0].Versions[0].Resources, "pods")
	if pods == nil || pods.Scope != apidiscoveryv2.ScopeNamespace || pods.SingularResource != "pod" ||
		pods.ResponseKind == nil || pods.ResponseKind.Kind != "Pod" || !reflect.DeepEqual(pods.ShortNames, []string{"po"}) {
		t.Fatalf("aggregated pods entry: %+v", pods)
	}
	if subs := subresourceNames(pods); !reflect.DeepEqual(subs, []string{"binding", "eviction", "status"}) {
		t.Errorf("pods subresources %v", subs)
	}

	resp, data := c.do(http.MethodGet, "/apis", "", nil, "Accept", aggregatedV2)
	etag := resp.Header.Get("ETag")
	var groups apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(data, &groups); err != nil {
		t.Fatal(err)
	}
	var gadgets *apidiscoveryv2.APIResourceDiscovery
	for _, g := range groups.Items {
		if g.Name == "" {
			t.Errorf("aggregated /apis lists the core group")
		}
		if g.Name == "example.com" {
			gadgets = findResource(g.Versions[0].Resources, "gadgets")
		}
	}
	if gadgets == nil {
		t.Fatalf("aggregated /apis lacks the CRD's gadgets: %s", data)
	}
	if !reflect.DeepEqual(gadgets.ShortNames, []string{"gd"}) || !reflect.DeepEqual(gadgets.Categories, []string{"all"}) {
		t.Errorf("gadgets names: %+v", gadgets)
	}
	if subs := subresourceNames(gadgets); !reflect.DeepEqual(subs, []string{"scale", "status"}) {
		t.Errorf("gadgets subresources %v", subs)
	}
	for _, s := range gadgets.Subresources {
		if s.Subresource == "scale" && (s.ResponseKind == nil || *s.ResponseKind != (metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"})) {
			t.Errorf("gadgets/scale responseKind %+v", s.ResponseKind)
		}
	}

	// Revalidation: same document, same ETag → 304.
	if etag == "" {
		t.Fatal("aggregated /apis has no ETag")
	}
	resp, _ = c.do(http.MethodGet, "/apis", "", nil, "Accept", aggregatedV2, "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", resp.StatusCode)
	}
	resp, _ = c.do(http.MethodGet, "/apis", "", nil, "Accept", "application/json", "If-None-Match", etag)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("legacy /apis with the aggregated ETag: %d, want 200", resp.StatusCode)
	}

	// client-go: the default (aggregated) and the legacy paths agree.
	agg, err := discovery.NewDiscoveryClientForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := discovery.NewDiscoveryClientForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	legacy.UseLegacyDiscovery = true
	aggGroups, aggResources, err := agg.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	legGroups, legResources, err := legacy.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := groupNames(aggGroups), groupNames(legGroups); !reflect.DeepEqual(got, want) {
		t.Errorf("groups: aggregated %v, legacy %v", got, want)
	}
	a, l := resourceSummary(aggResources), resourceSummary(legResources)
	if !reflect.DeepEqual(a, l) {
		for k, v := range l {
			if a[k] != v {
				t.Errorf("%s: aggregated %q, legacy %q", k, a[k], v)
			}
		}
		for k, v := range a {
			if _, ok := l[k]; !ok {
				t.Errorf("%s: only in aggregated (%q)", k, v)
			}
		}
	}
	for _, want := range []string{"v1 pods/status", "v1 pods/eviction", "apps/v1 deployments/scale", "example.com/v1 gadgets/scale", "example.com/v1 gadgets/status", "v1 namespaces/finalize"} {
		if _, ok := a[want]; !ok {
			t.Errorf("client-go aggregated discovery lacks %s", want)
		}
	}
}

func findResource(rs []apidiscoveryv2.APIResourceDiscovery, name string) *apidiscoveryv2.APIResourceDiscovery {
	for i := range rs {
		if rs[i].Resource == name {
			return &rs[i]
		}
	}
	return nil
}

func subresourceNames(r *apidiscoveryv2.APIResourceDiscovery) []string {
	var out []string
	for _, s := range r.Subresources {
		out = append(out, s.Subresource)
	}
	sort.Strings(out)
	return out
}

func groupNames(gs []*metav1.APIGroup) []string {
	var out []string
	for _, g := range gs {
		for _, v := range g.Versions {
			out = append(out, v.GroupVersion)
		}
		out = append(out, "preferred "+g.PreferredVersion.GroupVersion)
	}
	return out
}

// resourceSummary flattens client-go's resource lists to "gv name" →
// description. Legacy discovery leaves a subresource's group/version empty
// when it is the parent's, aggregated always names it: compare the resolved
// values. Legacy subresources carry no singular name, so it is left out for them.
func resourceSummary(lists []*metav1.APIResourceList) map[string]string {
	out := map[string]string{}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			g, v := r.Group, r.Version
			if g == "" && v == "" {
				g, v = gv.Group, gv.Version
			}
			singular := r.SingularName
			if strings.Contains(r.Name, "/") {
				singular = ""
			}
			out[l.GroupVersion+" "+r.Name] = strings.Join([]string{
				"kind=" + g + "/" + v + "/" + r.Kind, "singular=" + singular,
				"namespaced=" + map[bool]string{true: "yes", false: "no"}[r.Namespaced],
				"verbs=" + strings.Join(r.Verbs, ","), "short=" + strings.Join(r.ShortNames, ","),
				"categories=" + strings.Join(r.Categories, ","),
			}, " ")
		}
	}
	return out
}
