package main

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
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

// TestComponentConfigDialsInMemory checks that the server's own loops
// reach it through its in-memory listener: their configuration works with
// an address nothing listens on, as their own least-privilege users.
func TestComponentConfigDialsInMemory(t *testing.T) {
	srv := apiservertest.Start(t)
	rc, err := componentConfig(srv.Bundle, srv.Server, bootstrap.SchedulerUser)
	if err != nil {
		t.Fatal(err)
	}
	rc.Host = "https://127.0.0.1:1"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the scheduler's client: %v", err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the scheduler listed secrets: %v, want Forbidden (it must act as itself, not as admin)", err)
	}
}
