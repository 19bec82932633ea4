package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pods/log and friends are routed to the pod's node; what cannot reach one
// gets a Status saying why. (The streams themselves are tested in
// nodeproxy and, with real nodes, in test/e2e.)
func TestNodeSubresourceRouting(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("unscheduled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onHollow := testPod("on-hollow")
	onHollow.Spec.NodeName = "hollow"
	if _, err := pods.Create(ctx, onHollow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	logs := func(name string) error {
		// As kubectl reads logs: a stream.
		rc, err := pods.GetLogs(name, &corev1.PodLogOptions{}).Stream(ctx)
		if err == nil {
			rc.Close()
		}
		return err
	}
	check := func(what string, err error, code int32, msg string) {
		t.Helper()
		st, ok := err.(apierrors.APIStatus)
		if !ok || st.Status().Code != code || !strings.Contains(st.Status().Message, msg) {
			t.Errorf("%s: %v, want %d with %q", what, err, code, msg)
		}
	}
	err := logs("unscheduled")
	check("log of an unscheduled pod", err, 400, "does not have a host assigned")
	err = logs("on-hollow")
	check("log on a node without a node API", err, 503, `node "hollow" serves no node API`)
	err = logs("missing")
	check("log of a missing pod", err, 404, "not found")
	err = cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("on-hollow").SubResource("log").Do(ctx).Error()
	check("POST pods/log", err, 405, "")
	err = cs.AppsV1().RESTClient().Get().Namespace("default").Resource("deployments").Name("x").SubResource("log").Do(ctx).Error()
	check("deployments/log", err, 404, "")
}
