package main

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestControlPlaneClientsSpeakProtobuf checks that the in-process loops'
// typed clients send and read protobuf, as Kubernetes' components do (in
// JSON each binding, Event and status write costs both ends several times
// the CPU), and that the caller's configuration is left as it was.
func TestControlPlaneClientsSpeakProtobuf(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443"}
	_, managerConfig, err := controlPlaneClient(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range map[string]*rest.Config{"scheduler": schedulerClientConfig(base), "controller manager": managerConfig} {
		if rc.ContentType != protobufContentType || rc.AcceptContentTypes != protobufContentType+",application/json" {
			t.Errorf("%s client: Content-Type %q, Accept %q; want protobuf first", name, rc.ContentType, rc.AcceptContentTypes)
		}
	}
	if rc := schedulerClientConfig(base); rc.QPS < 2000 {
		t.Errorf("scheduler client QPS %v: two writes per pod at 1,000 pods/s need 2,000", rc.QPS)
	}
	if base.ContentType != "" || base.QPS != 0 {
		t.Errorf("the caller's configuration changed: %+v", base)
	}
}
