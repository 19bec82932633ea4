package endpoints

import (
	"bytes"
	stderrors "errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiffkube/skiff/apiserver/registry"
)

var configMaps = &registry.Resource{Version: "v1", Name: "configmaps", Kind: "ConfigMap", Namespaced: true,
	New: func() runtime.Object { return &corev1.ConfigMap{} }}

func TestDecodeFieldValidation(t *testing.T) {
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"b"},"spec":{"foo":1}}`)
	if _, err := decodeObject(configMaps, configMaps.GVK(), mediaJSON, body, fieldValidStrict); !errors.IsBadRequest(err) {
		t.Errorf("Strict: %v, want BadRequest", err)
	}
	d, err := decodeObject(configMaps, configMaps.GVK(), mediaJSON, body, fieldValidWarn)
	if err != nil || len(d.warnings) != 1 || d.warnings[0] != `unknown field "spec"` {
		t.Errorf("Warn: %v %v", d, err)
	}
	d, err = decodeObject(configMaps, configMaps.GVK(), mediaJSON, body, fieldValidIgnore)
	if err != nil || len(d.warnings) != 0 || d.obj.(*corev1.ConfigMap).Data["a"] != "b" {
		t.Errorf("Ignore: %v %v", d, err)
	}
	dup := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","name":"y"}}`)
	if _, err := decodeObject(configMaps, configMaps.GVK(), mediaJSON, dup, fieldValidStrict); !errors.IsBadRequest(err) {
		t.Errorf("Strict duplicate field: %v, want BadRequest", err)
	}
	yml := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: why\ndata:\n  k: v\n")
	d, err = decodeObject(configMaps, configMaps.GVK(), mediaYAML, yml, fieldValidStrict)
	if err != nil || d.obj.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Errorf("YAML: %v %v", d, err)
	}
}

func TestDecodeProtobuf(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"p": "q"}}
	cm.Name = "pb"
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	data, err := runtime.Encode(protoCodec, cm)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeObject(configMaps, configMaps.GVK(), mediaProtobuf, data, fieldValidStrict)
	if err != nil || d.obj.(*corev1.ConfigMap).Data["p"] != "q" || d.obj.(*corev1.ConfigMap).Name != "pb" {
		t.Fatalf("protobuf: %v %v", d, err)
	}
}

// FuzzDecodeObject: no body, however malformed, panics the decoder or
// yields anything but a decoded object or a 4xx Status.
func FuzzDecodeObject(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), 0)
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\n"), 1)
	f.Add([]byte("k8s\x00\x0a\x02v1"), 2)
	f.Add([]byte(`[[[[[[`), 0)
	media := []string{mediaJSON, mediaYAML, mediaProtobuf}
	f.Fuzz(func(t *testing.T, body []byte, m int) {
		if m < 0 {
			m = -m
		}
		_, err := decodeObject(configMaps, configMaps.GVK(), media[m%len(media)], body, fieldValidStrict)
		if err != nil {
			st := asStatus(err)
			if st.Code < 400 || st.Code >= 500 {
				t.Fatalf("decode error with code %d: %v", st.Code, err)
			}
		}
	})
}

// TestEncodeSameBytes checks that encodeObject and encodeProtobuf, which
// reuse scratch buffers and keep the serializer's own buffer, give exactly
// the serializers' bytes, and that an earlier result is not overwritten by
// a later encoding.
func TestEncodeSameBytes(t *testing.T) {
	objs := []runtime.Object{
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("v", 3000)}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"x": "y"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"n": int64(3)}}},
	}
	var jsons, protos [][]byte
	for _, obj := range objs {
		var want bytes.Buffer
		if u, ok := obj.(*unstructured.Unstructured); ok {
			// Unstructured objects keep the encoder's newline, as before.
			if err := unstructured.UnstructuredJSONScheme.Encode(u, &want); err != nil {
				t.Fatal(err)
			}
		} else if err := plainJSON.Encode(obj, &want); err != nil {
			t.Fatal(err)
		} else {
			want.Truncate(len(bytes.TrimRight(want.Bytes(), "\n")))
		}
		got, err := encodeObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("encodeObject(%T) = %s, want %s", obj, got, want.Bytes())
		}
		jsons = append(jsons, got)
		if _, ok := obj.(*unstructured.Unstructured); ok {
			if _, err := encodeProtobuf(obj); err == nil {
				t.Error("encodeProtobuf of an unstructured object succeeded")
			}
			continue
		}
		want.Reset()
		if err := protoCodec.Encode(obj, &want); err != nil {
			t.Fatal(err)
		}
		gotPB, err := encodeProtobuf(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotPB, want.Bytes()) {
			t.Errorf("encodeProtobuf(%T) differs from the serializer's bytes", obj)
		}
		protos = append(protos, gotPB)
	}
	// Encode everything again: the first results must be unchanged.
	for i, obj := range objs {
		again, err := encodeObject(obj)
		if err != nil || !bytes.Equal(again, jsons[i]) {
			t.Errorf("encodeObject(%T) changed between calls: %v", obj, err)
		}
	}
	for i, obj := range objs[:len(protos)] {
		if again, err := encodeProtobuf(obj); err != nil || !bytes.Equal(again, protos[i]) || !bytes.Equal(protos[i], mustProto(t, obj)) {
			t.Errorf("encodeProtobuf(%T) changed between calls: %v", obj, err)
		}
	}
}

func mustProto(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := protoCodec.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadAllMatchesIOReadAll feeds readAll bodies shorter than, as long
// as and longer than declared, in small reads and with a read error, and
// requires io.ReadAll's result.
func TestReadAllMatchesIOReadAll(t *testing.T) {
	body := []byte(strings.Repeat("0123456789", 70))
	boom := stderrors.New("boom")
	for _, declared := range []int64{-1, 0, 1, 699, 700, 701, 5000, MaxBodyBytes + 1} {
		for _, chunk := range []int{1, 7, 1000} {
			for _, fail := range []bool{false, true} {
				mk := func() io.Reader {
					var r io.Reader = &chunkReader{data: body, chunk: chunk}
					if fail {
						r = io.MultiReader(r, iotest.ErrReader(boom))
					}
					return r
				}
				want, wantErr := io.ReadAll(mk())
				got, err := readAll(mk(), declared)
				if !bytes.Equal(got, want) || err != wantErr {
					t.Errorf("declared %d chunk %d fail %v: got %d bytes, %v; want %d bytes, %v", declared, chunk, fail, len(got), err, len(want), wantErr)
				}
			}
		}
	}
}

type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.chunk, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}
