package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// The fuzz targets below drive the request body decoding path that every
// POST, PUT and PATCH goes through. Run one briefly with
//
//	go test ./apiserver/endpoints -run '^$' -fuzz '^FuzzDecodeWrite$' -fuzztime 20s
//
// (hack/test.sh does so in CI). Without -fuzz the seeds run as unit tests.

// fuzzResources are typed kinds of several groups plus an unstructured
// custom resource.
func fuzzResources() []*registry.Resource {
	var out []*registry.Resource
	for _, r := range registry.Builtins(registry.Hooks{}, nil) {
		switch r.Name {
		case "pods", "configmaps", "services", "deployments", "namespaces", "roles", "leases":
			out = append(out, r)
		}
	}
	out = append(out, &registry.Resource{Group: "example.com", Version: "v1", Name: "widgets", Kind: "Widget", Namespaced: true, Strategy: &registry.DefaultStrategy{Namespaced: true}})
	return out
}

var fuzzMedia = []string{
	mediaJSON, mediaYAML, mediaProtobuf, "application/x-yaml", "text/plain", "",
	"application/json; charset=utf-8", "application/vnd.kubernetes.protobuf;foo=bar", "application/json;;",
}

var fuzzValidation = []string{"", "Strict", "Warn", "Ignore", "strict", "bogus"}

// wantClientError fails unless err is a Status with a 4xx code: bad input
// is the client's fault, never a 500.
func wantClientError(t *testing.T, err error) {
	t.Helper()
	st := asStatus(err)
	if st.Code < 400 || st.Code >= 500 || st.Kind != "Status" || st.Message == "" {
		t.Fatalf("error is not a 4xx Status (code %d, reason %q): %v", st.Code, st.Reason, err)
	}
}

func seedBodies(f *testing.F) [][]byte {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}
	podProto, err := runtime.Encode(protoCodec, pod)
	if err != nil {
		f.Fatal(err)
	}
	replicas := int32(2)
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}
	depProto, err := runtime.Encode(protoCodec, dep)
	if err != nil {
		f.Fatal(err)
	}
	podJSON, _ := json.Marshal(pod)
	return [][]byte{
		podJSON, podProto, depProto,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"}}`),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","name":"y"},"unknown":1}`),
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":"two"}}`),
		[]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3}}`),
		[]byte(`{"apiVersion":"v2","kind":"Pod"}`),
		[]byte(`{"kind":"Secret"}`),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n"),
		[]byte("a: &a [*a, *a]\n"),
		[]byte("- - - -\n"),
		[]byte(`null`), []byte(`[]`), []byte(`"s"`), []byte(`{`), []byte{}, []byte("k8s\x00"), []byte("k8s\x00\x0a\x02v1\x12\x03Pod"),
		bytes.Repeat([]byte("["), 20000),
		[]byte(`{"metadata":{"name":"\u0000","labels":{"-":"-"}},"spec":{"containers":[{"name":1e400}]}}`),
	}
}

// FuzzDecodeWrite feeds arbitrary bodies, media types and fieldValidation
// values through decodeWrite (the POST/PUT body path: size limit, media
// type, JSON/YAML/protobuf decoding, kind and apiVersion checks, unknown
// fields, custom resource pruning): the result is a well-formed object of
// the resource's kind or a 4xx Status, never a panic or a 5xx.
func FuzzDecodeWrite(f *testing.F) {
	for _, b := range seedBodies(f) {
		for m := range fuzzMedia[:3] {
			f.Add(b, uint8(m), uint8(1), uint8(0))
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`), uint8(0), uint8(2), uint8(1))
	resources := fuzzResources()
	h := &Handler{reg: registry.New(), fms: newFieldManagers()}
	f.Fuzz(func(t *testing.T, body []byte, media, validation, resource uint8) {
		res := resources[int(resource)%len(resources)]
		ct := fuzzMedia[int(media)%len(fuzzMedia)]
		v := fuzzValidation[int(validation)%len(fuzzValidation)]
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/x?fieldValidation="+v, bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		req := &request{ctx: context.Background(), w: w, r: r, res: res}
		obj, _, err := h.decodeWrite(req)
		if err != nil {
			wantClientError(t, err)
			return
		}
		if obj == nil {
			t.Fatal("no error and no object")
		}
		if got := obj.GetObjectKind().GroupVersionKind(); got != res.GVK() {
			t.Fatalf("decoded kind %v, want %v", got, res.GVK())
		}
		if !res.Unstructured() && reflect.TypeOf(obj) != reflect.TypeOf(res.New()) {
			t.Fatalf("decoded %T, want %T", obj, res.New())
		}
		if _, err := encodeObject(obj); err != nil {
			t.Fatalf("decoded object does not encode: %v", err)
		}
	})
}

// FuzzDecodePatch feeds arbitrary JSON, merge and strategic merge patches
// to a stored object and decodes the result as the PATCH handler does:
// a 4xx Status or an object of the resource's kind.
func FuzzDecodePatch(f *testing.F) {
	for _, p := range []string{
		`[{"op":"replace","path":"/spec/replicas","value":3}]`,
		`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`,
		`[{"op":"remove","path":"/nope"}]`,
		`[{"op":"move","from":"/spec","path":"/spec/template"}]`,
		`{"spec":{"replicas":4}}`,
		`{"metadata":{"labels":null}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
		`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"$patch":"delete","name":"c"}]}}}}`,
		`{"$patch":"replace","kind":"Deployment"}`,
		`{"spec":{"$retainKeys":["replicas"],"replicas":1}}`,
		`{"kind":"Pod"}`, `[]`, `null`, `{`, ``,
	} {
		for m := 0; m < 3; m++ {
			f.Add([]byte(p), uint8(m))
		}
	}
	var dep *registry.Resource
	for _, r := range registry.Builtins(registry.Hooks{}, nil) {
		if r.Name == "deployments" {
			dep = r
		}
	}
	replicas := int32(2)
	cur, err := encodeObject(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})
	if err != nil {
		f.Fatal(err)
	}
	media := []string{mediaJSONPatch, mediaMergePatch, mediaStrategic}
	f.Fuzz(func(t *testing.T, patch []byte, m uint8) {
		out, err := applyPatch(dep, media[int(m)%len(media)], cur, patch)
		if err != nil {
			wantClientError(t, err)
			return
		}
		d, err := decodeJSONObject(dep, dep.GVK(), out, fieldValidStrict)
		if err != nil {
			wantClientError(t, err)
			return
		}
		if _, ok := d.obj.(*appsv1.Deployment); !ok {
			t.Fatalf("patched object is %T", d.obj)
		}
	})
}
