package endpoints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
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
