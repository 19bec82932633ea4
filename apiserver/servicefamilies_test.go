package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// invalidCause returns the one cause of a 422, failing the test otherwise.
func invalidCause(t *testing.T, what string, err error) metav1.StatusCause {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: %v, want Invalid", what, err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Details == nil || len(st.Details.Causes) != 1 {
		t.Fatalf("%s: causes %+v, want one", what, st.Details)
	}
	return st.Details.Causes[0]
}

// TestServiceIPFamiliesOnSingleStackCluster: skiff's Service network is
// single-stack IPv4, so as Kubernetes on such a cluster it refuses a
// Service that demands dual-stack, asks for IPv6, or lists two families
// while SingleStack, instead of storing an IPv4 cluster IP under
// ipFamilies [IPv6] (whose EndpointSlices would be IPv6 and empty).
func TestServiceIPFamiliesOnSingleStackCluster(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	pol := func(p corev1.IPFamilyPolicy) *corev1.IPFamilyPolicy { return &p }
	fams := func(f ...corev1.IPFamily) []corev1.IPFamily { return f }

	refused := []struct {
		name     string
		policy   *corev1.IPFamilyPolicy
		families []corev1.IPFamily
		field    string
		msg      string
	}{
		{"require-dual", pol(corev1.IPFamilyPolicyRequireDualStack), nil, "spec.ipFamilyPolicy", "this cluster is not configured for dual-stack services"},
		{"v6", nil, fams(corev1.IPv6Protocol), "spec.ipFamilies[0]", "not configured on this cluster"},
		{"prefer-two", pol(corev1.IPFamilyPolicyPreferDualStack), fams(corev1.IPv4Protocol, corev1.IPv6Protocol), "spec.ipFamilies[1]", "not configured on this cluster"},
		{"same-twice", pol(corev1.IPFamilyPolicyPreferDualStack), fams(corev1.IPv4Protocol, corev1.IPv4Protocol), "spec.ipFamilies[1]", `Duplicate value: "IPv4"`},
		{"single-two", nil, fams(corev1.IPv4Protocol, corev1.IPv6Protocol), "spec.ipFamilyPolicy", "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"},
	}
	for _, tc := range refused {
		s := service(tc.name, "ClusterIP", "")
		s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = tc.policy, tc.families
		_, err := svcs.Create(ctx, s, metav1.CreateOptions{})
		c := invalidCause(t, tc.name, err)
		if c.Field != tc.field || !strings.HasSuffix(c.Message, tc.msg) {
			t.Errorf("%s: cause %s %q, want %s ...%q", tc.name, c.Field, c.Message, tc.field, tc.msg)
		}
	}

	// A second cluster IP, of the family the cluster lacks, is refused on
	// it, not dropped; two under SingleStack are refused on the policy.
	for _, tc := range []struct {
		name   string
		policy *corev1.IPFamilyPolicy
		field  string
		msg    string
	}{
		{"two-ips", pol(corev1.IPFamilyPolicyPreferDualStack), "spec.clusterIPs[1]", "IPv6 is not configured on this cluster"},
		{"two-ips-single", nil, "spec.ipFamilyPolicy", "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"},
	} {
		s := service(tc.name, "ClusterIP", "10.43.0.78")
		s.Spec.ClusterIPs = []string{"10.43.0.78", "fd00::78"}
		s.Spec.IPFamilyPolicy = tc.policy
		_, err := svcs.Create(ctx, s, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("%s: %v, want Invalid", tc.name, err)
		}
		found := false
		for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
			found = found || c.Field == tc.field && strings.HasSuffix(c.Message, tc.msg)
		}
		if !found {
			t.Errorf("%s: %v, want a cause %s ...%q", tc.name, err, tc.field, tc.msg)
		}
	}

	// PreferDualStack settles for the one family there is.
	s := service("prefer", "ClusterIP", "")
	s.Spec.IPFamilyPolicy = pol(corev1.IPFamilyPolicyPreferDualStack)
	got, err := svcs.Create(ctx, s, metav1.CreateOptions{})
	if err != nil || len(got.Spec.ClusterIPs) != 1 || len(got.Spec.IPFamilies) != 1 || got.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Fatalf("PreferDualStack: %v %v %v", err, got.Spec.ClusterIPs, got.Spec.IPFamilies)
	}
	// A headless Service without selector may list both families (its
	// endpoints are the user's).
	h := service("headless-manual", "ClusterIP", "None")
	h.Spec.Selector = nil
	h.Spec.IPFamilyPolicy = pol(corev1.IPFamilyPolicyRequireDualStack)
	h.Spec.IPFamilies = fams(corev1.IPv4Protocol, corev1.IPv6Protocol)
	if _, err := svcs.Create(ctx, h, metav1.CreateOptions{}); err != nil {
		t.Errorf("headless selectorless dual-stack: %v", err)
	}

	// Updates are judged too: demanding dual-stack later, or an
	// ExternalName becoming a ClusterIP Service of an absent family.
	_, err = svcs.Patch(ctx, "prefer", types.MergePatchType, []byte(`{"spec":{"ipFamilyPolicy":"RequireDualStack"}}`), metav1.PatchOptions{})
	if c := invalidCause(t, "patch to RequireDualStack", err); c.Field != "spec.ipFamilyPolicy" {
		t.Errorf("patch to RequireDualStack: cause %+v", c)
	}
	// Nor may an update add a cluster IP the cluster cannot serve.
	second := fmt.Sprintf(`{"spec":{"clusterIPs":[%q,"fd00::9"]}}`, got.Spec.ClusterIP)
	_, err = svcs.Patch(ctx, "prefer", types.MergePatchType, []byte(second), metav1.PatchOptions{})
	if c := invalidCause(t, "second cluster IP by update", err); c.Field != "spec.clusterIPs[1]" {
		t.Errorf("second cluster IP by update: cause %+v", c)
	}
	en := service("alias", "ExternalName", "")
	en.Spec.ExternalName = "example.com"
	if _, err := svcs.Create(ctx, en, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = svcs.Patch(ctx, "alias", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP","ipFamilies":["IPv6"]}}`), metav1.PatchOptions{})
	if c := invalidCause(t, "ExternalName to IPv6 ClusterIP", err); c.Field != "spec.ipFamilies[0]" {
		t.Errorf("ExternalName to IPv6 ClusterIP: cause %+v", c)
	}
	// An unrelated update of a stored Service is not refused.
	if _, err := svcs.Patch(ctx, "prefer", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("label patch: %v", err)
	}
}

// TestServiceAllocationErrorMessages: a requested cluster IP or node port
// that is taken is refused as Kubernetes refuses it, on spec.clusterIPs
// (the whole list) with "failed to allocate IP X: provided IP is already
// allocated", and on the port's nodePort with "provided port is already
// allocated", each said once.
func TestServiceAllocationErrorMessages(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	a, err := svcs.Create(ctx, service("a", "NodePort", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := a.Spec.ClusterIP
	_, err = svcs.Create(ctx, service("dup", "ClusterIP", ip), metav1.CreateOptions{})
	c := invalidCause(t, "taken IP", err)
	if want := "failed to allocate IP " + ip + ": provided IP is already allocated"; c.Field != "spec.clusterIPs" || !strings.HasSuffix(c.Message, want) || strings.Count(c.Message, "failed to allocate") != 1 {
		t.Errorf("taken IP: cause %s %q, want spec.clusterIPs ...%q", c.Field, c.Message, want)
	}
	_, err = svcs.Create(ctx, service("out", "ClusterIP", "10.99.0.5"), metav1.CreateOptions{})
	c = invalidCause(t, "IP out of range", err)
	if want := "failed to allocate IP 10.99.0.5: the provided IP (10.99.0.5) is not in the valid range. The range of valid IPs is 10.43.0.0/16"; c.Field != "spec.clusterIPs" || !strings.HasSuffix(c.Message, want) {
		t.Errorf("IP out of range: cause %s %q, want spec.clusterIPs ...%q", c.Field, c.Message, want)
	}
	np := service("dupport", "NodePort", "")
	np.Spec.Ports[0].NodePort = a.Spec.Ports[0].NodePort
	_, err = svcs.Create(ctx, np, metav1.CreateOptions{})
	c = invalidCause(t, "taken node port", err)
	if c.Field != "spec.ports[0].nodePort" || !strings.HasSuffix(c.Message, ": provided port is already allocated") || strings.Count(c.Message, "allocated") != 1 {
		t.Errorf("taken node port: cause %s %q", c.Field, c.Message)
	}
}

// TestServiceNodePortSharedAcrossProtocols: as Kubernetes, the ports of a
// Service with one port number over several protocols (DNS on 53/TCP and
// 53/UDP) share one node port, allocated once, whether the server picks it
// or the user asks for it on each; deletion frees it.
func TestServiceNodePortSharedAcrossProtocols(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	dns := func(name string, nodePort int32) *corev1.Service {
		s := service(name, "NodePort", "")
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "tcp", Port: 53, Protocol: corev1.ProtocolTCP, NodePort: nodePort},
			{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: nodePort},
			{Name: "other", Port: 54, Protocol: corev1.ProtocolTCP},
		}
		return s
	}
	auto, err := svcs.Create(ctx, dns("auto", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := auto.Spec.Ports
	if p[0].NodePort == 0 || p[1].NodePort != p[0].NodePort || p[2].NodePort == p[0].NodePort {
		t.Errorf("node ports %d %d %d: want the first two equal, the third another", p[0].NodePort, p[1].NodePort, p[2].NodePort)
	}
	asked, err := svcs.Create(ctx, dns("asked", 30053), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("one node port asked for 53/TCP and 53/UDP: %v", err)
	}
	if p := asked.Spec.Ports; p[0].NodePort != 30053 || p[1].NodePort != 30053 {
		t.Errorf("asked: node ports %d %d", p[0].NodePort, p[1].NodePort)
	}
	// An update that keeps the shared port keeps it allocated once.
	if _, err := svcs.Patch(ctx, "asked", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The shared port is allocated: another Service cannot have it.
	taken := service("taken", "NodePort", "")
	taken.Spec.Ports[0].NodePort = 30053
	if _, err := svcs.Create(ctx, taken, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("30053 while held: %v, want Invalid", err)
	}
	if err := svcs.Delete(ctx, "asked", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, taken, metav1.CreateOptions{}); err != nil {
		t.Errorf("30053 not freed by the deletion: %v", err)
	}
}

// TestServiceRangeExhausted: with every cluster IP (or node port) taken, a
// Service is refused as Kubernetes refuses it, a 500 saying "failed to
// allocate a serviceIP: range is full" (or "a nodePort"), said once.
func TestServiceRangeExhausted(t *testing.T) {
	srv := apiservertest.StartWrapped(t, nil, func(c *apiserver.Config) {
		c.ServiceCIDR = "10.99.0.0/29" // 6 usable, the first the kubernetes Service's
		c.NodePortRange = "30000-30001"
	})
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	var last error
	for i := 0; i < 7 && last == nil; i++ {
		_, last = svcs.Create(ctx, service(fmt.Sprintf("s%d", i), "ClusterIP", ""), metav1.CreateOptions{})
	}
	if !apierrors.IsInternalError(last) || !strings.Contains(last.Error(), "failed to allocate a serviceIP: range is full") ||
		strings.Count(last.Error(), "failed to allocate") != 1 {
		t.Errorf("full service CIDR: %v", last)
	}
	for i := 1; i < 4; i++ { // free three cluster IPs for the node port Services
		if err := svcs.Delete(ctx, fmt.Sprintf("s%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	last = nil
	for i := 0; i < 3 && last == nil; i++ {
		_, last = svcs.Create(ctx, service(fmt.Sprintf("np%d", i), "NodePort", ""), metav1.CreateOptions{})
	}
	if !apierrors.IsInternalError(last) || !strings.Contains(last.Error(), "failed to allocate a nodePort: range is full") ||
		strings.Count(last.Error(), "failed to allocate") != 1 {
		t.Errorf("full node port range: %v", last)
	}
}
