package endpoints

import "testing"

func TestParseRequestInfo(t *testing.T) {
	cases := []struct {
		method, path string
		watch        bool
		want         RequestInfo
		ok           bool
	}{
		{"GET", "/api/v1/namespaces", false, RequestInfo{Version: "v1", Resource: "namespaces", Verb: "list", IsResourceRequest: true}, true},
		{"GET", "/api/v1/namespaces/foo", false, RequestInfo{Version: "v1", Resource: "namespaces", Name: "foo", Verb: "get", IsResourceRequest: true}, true},
		{"PUT", "/api/v1/namespaces/foo/finalize", false, RequestInfo{Version: "v1", Resource: "namespaces", Name: "foo", Subresource: "finalize", Verb: "update", IsResourceRequest: true}, true},
		{"PATCH", "/api/v1/namespaces/foo/status", false, RequestInfo{Version: "v1", Resource: "namespaces", Name: "foo", Subresource: "status", Verb: "patch", IsResourceRequest: true}, true},
		{"GET", "/api/v1/namespaces/foo/pods", true, RequestInfo{Version: "v1", Namespace: "foo", Resource: "pods", Verb: "watch", IsResourceRequest: true}, true},
		{"GET", "/api/v1/watch/namespaces/foo/pods", false, RequestInfo{Version: "v1", Namespace: "foo", Resource: "pods", Verb: "watch", IsResourceRequest: true}, true},
		{"POST", "/api/v1/watch/namespaces/foo/pods", false, RequestInfo{Version: "v1", Namespace: "foo", Resource: "pods", Verb: "watch", IsResourceRequest: true}, true},
		{"DELETE", "/api/v1/watch/namespaces/foo/pods/p", false, RequestInfo{Version: "v1", Namespace: "foo", Resource: "pods", Name: "p", Verb: "watch", IsResourceRequest: true}, true},
		{"POST", "/api/v1/namespaces/foo/pods/p/binding", false, RequestInfo{Version: "v1", Namespace: "foo", Resource: "pods", Name: "p", Subresource: "binding", Verb: "create", IsResourceRequest: true}, true},
		{"DELETE", "/apis/apps/v1/namespaces/a/deployments", false, RequestInfo{Group: "apps", Version: "v1", Namespace: "a", Resource: "deployments", Verb: "deletecollection", IsResourceRequest: true}, true},
		{"DELETE", "/apis/apps/v1/namespaces/a/deployments/d", false, RequestInfo{Group: "apps", Version: "v1", Namespace: "a", Resource: "deployments", Name: "d", Verb: "delete", IsResourceRequest: true}, true},
		{"GET", "/apis/apps/v1", false, RequestInfo{Group: "apps", Version: "v1", IsGroupVersionDocument: true}, true},
		{"GET", "/apis/apps/v1/deployments/a/b/c", false, RequestInfo{}, false},
		{"GET", "/healthz", false, RequestInfo{}, false},
	}
	for _, tc := range cases {
		got, ok := ParseRequestInfo(tc.method, tc.path, tc.watch)
		if ok != tc.ok {
			t.Errorf("%s %s: ok=%v, want %v", tc.method, tc.path, ok, tc.ok)
			continue
		}
		if ok && got != tc.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestNegotiate(t *testing.T) {
	cases := []struct {
		accept string
		typed  bool
		want   outputKind
		enc    encoding
		err    bool
	}{
		{"", true, outObject, encJSON, false},
		{"application/json", true, outObject, encJSON, false},
		{"*/*", true, outObject, encJSON, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", true, outTable, encJSON, false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", true, outTable, encJSON, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json", true, outPartial, encJSON, false},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json", false, outPartial, encProtobuf, false},
		{"application/vnd.kubernetes.protobuf,application/json", true, outObject, encProtobuf, false},
		{"application/vnd.kubernetes.protobuf", true, outObject, encProtobuf, false},
		{"application/json, application/vnd.kubernetes.protobuf", true, outObject, encJSON, false},
		// Custom resources have no protobuf form: JSON when listed, else 406.
		{"application/vnd.kubernetes.protobuf,application/json", false, outObject, encJSON, false},
		{"application/vnd.kubernetes.protobuf", false, outObject, encJSON, true},
		// Tables are JSON only.
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", true, outObject, encJSON, false},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", true, outObject, encJSON, true},
		{"application/json;as=Table;v=v9;g=meta.k8s.io,application/json", true, outObject, encJSON, false},
		{"application/yaml", true, outObject, encJSON, false},
		{"text/html", true, outObject, encJSON, true},
	}
	for _, tc := range cases {
		got, enc, err := negotiate(tc.accept, tc.typed)
		if (err != nil) != tc.err || got != tc.want || enc != tc.enc {
			t.Errorf("negotiate(%q, typed=%v) = %v, %v, %v; want %v, %v, err=%v", tc.accept, tc.typed, got, enc, err, tc.want, tc.enc, tc.err)
		}
	}
}
