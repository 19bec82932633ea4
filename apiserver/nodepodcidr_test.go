package apiserver_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// spec.podCIDR and spec.podCIDRs are one field to Kubernetes (its internal Node has only podCIDRs):
// a client that sets either gets both, and where they differ podCIDR wins, as older clients know only
// it. The node agent reads podCIDR, node IPAM both.
func TestNodePodCIDRAndPodCIDRsAgree(t *testing.T) {
	srv := apiservertest.Start(t)
	c := clientsetFor(t, srv.Config)
	ctx := context.Background()
	for _, tc := range []struct {
		name, podCIDR string
		podCIDRs      []string
		want          string
	}{
		{name: "only-podcidr", podCIDR: "10.42.7.0/24", want: "10.42.7.0/24"},
		{name: "only-podcidrs", podCIDRs: []string{"10.42.8.0/24"}, want: "10.42.8.0/24"},
		{name: "disagreeing", podCIDR: "10.42.9.0/24", podCIDRs: []string{"10.42.10.0/24"}, want: "10.42.9.0/24"},
	} {
		n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
			Spec: corev1.NodeSpec{PodCIDR: tc.podCIDR, PodCIDRs: tc.podCIDRs}}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if n.Spec.PodCIDR != tc.want || len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != tc.want {
			t.Errorf("%s: podCIDR %q podCIDRs %v, want %s in both", tc.name, n.Spec.PodCIDR, n.Spec.PodCIDRs, tc.want)
		}
	}
	// A patch of podCIDR alone, as a script written before podCIDRs would send, sets both.
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "patched"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := c.CoreV1().Nodes().Patch(ctx, "patched", types.MergePatchType, []byte(`{"spec":{"podCIDR":"10.42.11.0/24"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.PodCIDR != "10.42.11.0/24" || len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != "10.42.11.0/24" {
		t.Errorf("patched: podCIDR %q podCIDRs %v", n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
}
