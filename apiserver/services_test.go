package apiserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/apiserver"
	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/storage"
)

func service(name, typ, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceType(typ), ClusterIP: ip, Selector: map[string]string{"a": "b"},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
}

// TestServiceAllocation: Services get a cluster IP from the service CIDR
// and NodePort services a node port; a taken IP is refused; deletion frees.
func TestServiceAllocation(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	cidr := netip.MustParsePrefix("10.43.0.0/16")

	a, err := svcs.Create(ctx, service("a", "ClusterIP", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(a.Spec.ClusterIP)
	if err != nil || !cidr.Contains(ip) || len(a.Spec.ClusterIPs) != 1 || a.Spec.ClusterIPs[0] != a.Spec.ClusterIP {
		t.Fatalf("cluster IP %q (%v) not from %s", a.Spec.ClusterIP, a.Spec.ClusterIPs, cidr)
	}
	np, err := svcs.Create(ctx, service("np", "NodePort", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := np.Spec.Ports[0].NodePort; p < 30000 || p > 32767 || np.Spec.ClusterIP == a.Spec.ClusterIP {
		t.Errorf("node port %d, cluster IP %s", p, np.Spec.ClusterIP)
	}
	headless, err := svcs.Create(ctx, service("h", "ClusterIP", "None"), metav1.CreateOptions{})
	if err != nil || headless.Spec.ClusterIP != "None" {
		t.Errorf("headless: %v %q", err, headless.Spec.ClusterIP)
	}
	if _, err := svcs.Create(ctx, service("dup", "ClusterIP", a.Spec.ClusterIP), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("taken IP: %v, want Invalid", err)
	}
	// An update that omits the cluster IP keeps it.
	a.Spec.ClusterIP, a.Spec.ClusterIPs = "", nil
	a.Labels = map[string]string{"x": "y"}
	up, err := svcs.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil || up.Spec.ClusterIP != ip.String() {
		t.Errorf("update without clusterIP: %v %q", err, up.Spec.ClusterIP)
	}
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := svcs.Create(ctx, service("again", "ClusterIP", ip.String()), metav1.CreateOptions{})
	if err != nil || again.Spec.ClusterIP != ip.String() {
		t.Errorf("IP not released on delete: %v", err)
	}
}

// TestKubernetesService: the API server publishes itself as the
// "kubernetes" Service (first IP of the service CIDR) with its address in
// the Service's Endpoints and EndpointSlice.
func TestKubernetesService(t *testing.T) {
	cs, srv := clientset(t)
	ctx := context.Background()
	var svc *corev1.Service
	var err error
	// The server writes the Service, then its Endpoints and EndpointSlice:
	// wait for the last of them.
	for i := 0; i < 100; i++ {
		if _, err = cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err == nil {
		svc, err = cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.43.0.1" || svc.Spec.Ports[0].Port != 443 {
		t.Fatalf("kubernetes Service %+v", svc.Spec)
	}
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].IP != "127.0.0.1" || fmt.Sprint(ep.Subsets[0].Ports[0].Port) != port {
		t.Fatalf("kubernetes Endpoints %+v (%v), want 127.0.0.1:%s", ep, err, port)
	}
	// As Kubernetes' API server: the EndpointSlice mirroring controller leaves it alone.
	if ep.Labels["endpointslice.kubernetes.io/skip-mirror"] != "true" {
		t.Errorf("kubernetes Endpoints labels %v, want endpointslice.kubernetes.io/skip-mirror=true", ep.Labels)
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || slice.Endpoints[0].Addresses[0] != "127.0.0.1" {
		t.Fatalf("kubernetes EndpointSlice %+v (%v)", slice, err)
	}
	// A user Service never gets the reserved IP.
	if _, err := cs.CoreV1().Services("default").Create(ctx, service("taken", "ClusterIP", "10.43.0.1"), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a Service asking for the kubernetes Service's IP: %v, want Invalid", err)
	}
}

// TestServiceUpdateKeepsAllocationsUntilCommit: an update that validation
// rejects, or a dry run, must not free the cluster IP and node port the
// stored Service still holds; a valid update frees what it gives up only
// once it is stored.
func TestServiceUpdateKeepsAllocationsUntilCommit(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	np, err := svcs.Create(ctx, service("np", "NodePort", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, port := np.Spec.ClusterIP, np.Spec.Ports[0].NodePort
	freePort := port + 1
	if freePort > 32767 {
		freePort = port - 1
	}

	// Invalid: the cluster IP is immutable. The same update asks for another
	// node port, which must not be taken either.
	bad := np.DeepCopy()
	bad.Spec.ClusterIP, bad.Spec.ClusterIPs = "10.43.200.200", []string{"10.43.200.200"}
	bad.Spec.Ports[0].NodePort = freePort
	if _, err := svcs.Update(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("update changing the cluster IP: %v, want Invalid", err)
	}
	// A dry run that moves the node port frees nothing either.
	dry := np.DeepCopy()
	dry.Spec.Ports[0].NodePort = freePort
	if _, err := svcs.Update(ctx, dry, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run update: %v", err)
	}
	stealIP := service("steal-ip", "ClusterIP", ip)
	if _, err := svcs.Create(ctx, stealIP, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("creating a Service with np's cluster IP %s: %v, want Invalid (still allocated)", ip, err)
	}
	stealPort := service("steal-port", "NodePort", "")
	stealPort.Spec.Ports[0].NodePort = port
	if _, err := svcs.Create(ctx, stealPort, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("creating a Service with np's node port %d: %v, want Invalid (still allocated)", port, err)
	}
	for _, name := range []string{"steal-ip", "steal-port"} {
		_ = svcs.Delete(ctx, name, metav1.DeleteOptions{})
	}

	// Neither the rejected update nor the dry run kept 10.43.200.200 or
	// freePort: both can be taken now.
	probe := service("probe", "NodePort", "10.43.200.200")
	probe.Spec.Ports[0].NodePort = freePort
	if _, err := svcs.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the rejected update leaked its allocations: %v", err)
	}
	if err := svcs.Delete(ctx, "probe", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A valid update moving the node port frees the old one once stored.
	cur, err := svcs.Get(ctx, "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Ports[0].NodePort = freePort
	up, err := svcs.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil || up.Spec.Ports[0].NodePort != freePort || up.Spec.ClusterIP != ip {
		t.Fatalf("valid update: %v %+v", err, up)
	}
	again := service("again", "NodePort", "")
	again.Spec.Ports[0].NodePort = port
	if _, err := svcs.Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Errorf("the old node port %d was not released by the stored update: %v", port, err)
	}
	taken := service("taken", "NodePort", "")
	taken.Spec.Ports[0].NodePort = freePort
	if _, err := svcs.Create(ctx, taken, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("node port %d held by np after the update: %v, want Invalid", freePort, err)
	}
}

// TestKubernetesEndpointsFollowLiveServers: the kubernetes Endpoints and
// EndpointSlices list the API servers whose lease is current, each at the
// port its lease records; a server that stopped renewing (here leases
// written for 10.9.9.9 and 10.9.9.8 that expire) drops out, and so does the
// slice of a port no server uses any more.
func TestKubernetesEndpointsFollowLiveServers(t *testing.T) {
	srv := apiservertest.StartWrapped(t, nil, func(c *apiserver.Config) { c.EndpointReconcileInterval = 200 * time.Millisecond },
		func(c *storage.Config) { c.TTLSweepInterval = 100 * time.Millisecond })
	cs := clientsetFor(t, srv.Config)
	ctx := context.Background()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	// "ip:port ip:port" over every subset, and "slice=ip:port …" over the slices.
	endpoints := func() string {
		ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, sub := range ep.Subsets {
			for _, a := range sub.Addresses {
				out = append(out, fmt.Sprintf("%s:%d", a.IP, sub.Ports[0].Port))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	endpointSlices := func() string {
		l, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				out = append(out, fmt.Sprintf("%s=%s:%d", s.Name, e.Addresses[0], *s.Ports[0].Port))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	waitFor := func(wantEndpoints, wantSlices string) {
		t.Helper()
		for i := 0; i < 150; i++ {
			if endpoints() == wantEndpoints && endpointSlices() == wantSlices {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("kubernetes Endpoints %q, want %q; EndpointSlices %q, want %q", endpoints(), wantEndpoints, endpointSlices(), wantSlices)
	}
	self := "127.0.0.1:" + port
	waitFor(self, "kubernetes="+self)
	// A lease of an older skiff carries no port: it serves on ours.
	if _, err := srv.Store.Create(ctx, "/registry/masterleases/10.9.9.9", []byte(`{"ip":"10.9.9.9"}`), time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor("10.9.9.9:"+port+" "+self, "kubernetes=10.9.9.9:"+port+" kubernetes="+self)
	waitFor(self, "kubernetes="+self) // its lease expired
	if _, err := srv.Store.Create(ctx, "/registry/masterleases/10.9.9.8", []byte(`{"ip":"10.9.9.8","port":7443}`), 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// One server on each port: the lower port's slice is "kubernetes".
	waitFor("10.9.9.8:7443 "+self, "kubernetes-"+port+"="+self+" kubernetes=10.9.9.8:7443")
	waitFor(self, "kubernetes="+self)
}

// TestServiceTypeChangeDropsTypeDependentFields: as Kubernetes' Service
// registry, a type change that no longer needs a field the server filled in
// (node ports, the health-check node port, externalTrafficPolicy, the
// cluster IPs and families for ExternalName, allocateLoadBalancerNodePorts,
// loadBalancerClass) drops it when the client sent it back unchanged, so
// `kubectl patch svc x -p '{"spec":{"type":"ClusterIP"}}'` works. A value the
// client changed in the same request is kept, and validation judges it.
func TestServiceTypeChangeDropsTypeDependentFields(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	patch := func(name, body string) (*corev1.Service, error) {
		return svcs.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	}

	lb := service("lb", "LoadBalancer", "")
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	class := "example.com/lb"
	lb.Spec.LoadBalancerClass = &class
	created, err := svcs.Create(ctx, lb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.HealthCheckNodePort == 0 || created.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("LoadBalancer created without node ports: %+v", created.Spec)
	}
	np, hc := created.Spec.Ports[0].NodePort, created.Spec.HealthCheckNodePort
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	if _, err := svcs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	toNodePort, err := patch("lb", `{"spec":{"type":"NodePort","loadBalancerClass":null}}`)
	if err != nil {
		t.Fatalf("LoadBalancer -> NodePort: %v", err)
	}
	if toNodePort.Spec.HealthCheckNodePort != 0 || toNodePort.Spec.AllocateLoadBalancerNodePorts != nil {
		t.Errorf("NodePort kept the LoadBalancer's fields: healthCheckNodePort %d, allocateLoadBalancerNodePorts %v",
			toNodePort.Spec.HealthCheckNodePort, toNodePort.Spec.AllocateLoadBalancerNodePorts)
	}
	if len(toNodePort.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("NodePort kept the load balancer's status: %+v", toNodePort.Status.LoadBalancer)
	}
	probe := service("probe", "LoadBalancer", "")
	probe.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	probe.Spec.HealthCheckNodePort = hc
	if _, err := svcs.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Errorf("health check node port %d not released by the type change: %v", hc, err)
	}
	if toNodePort.Spec.Ports[0].NodePort != np || toNodePort.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("NodePort lost what it still needs: nodePort %d (want %d), externalTrafficPolicy %q",
			toNodePort.Spec.Ports[0].NodePort, np, toNodePort.Spec.ExternalTrafficPolicy)
	}

	toClusterIP, err := patch("lb", `{"spec":{"type":"ClusterIP"}}`)
	if err != nil {
		t.Fatalf("NodePort -> ClusterIP: %v", err)
	}
	if toClusterIP.Spec.Ports[0].NodePort != 0 || toClusterIP.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("ClusterIP kept nodePort %d, externalTrafficPolicy %q", toClusterIP.Spec.Ports[0].NodePort, toClusterIP.Spec.ExternalTrafficPolicy)
	}
	// The node port went back to the pool once the update was stored.
	reuse := service("reuse", "NodePort", "")
	reuse.Spec.Ports[0].NodePort = np
	if _, err := svcs.Create(ctx, reuse, metav1.CreateOptions{}); err != nil {
		t.Errorf("node port %d not released by the type change: %v", np, err)
	}

	toExternal, err := patch("lb", `{"spec":{"type":"ExternalName","externalName":"db.example.com"}}`)
	if err != nil {
		t.Fatalf("ClusterIP -> ExternalName: %v", err)
	}
	if toExternal.Spec.ClusterIP != "" || len(toExternal.Spec.ClusterIPs) != 0 || len(toExternal.Spec.IPFamilies) != 0 || toExternal.Spec.IPFamilyPolicy != nil {
		t.Errorf("ExternalName kept clusterIP %q %v, families %v, policy %v", toExternal.Spec.ClusterIP,
			toExternal.Spec.ClusterIPs, toExternal.Spec.IPFamilies, toExternal.Spec.IPFamilyPolicy)
	}

	// A LoadBalancer that asks for no node ports gets none; a health check
	// node port on a Service without externalTrafficPolicy Local is refused.
	bare := service("bare", "LoadBalancer", "")
	no := false
	bare.Spec.AllocateLoadBalancerNodePorts = &no
	if got, err := svcs.Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Errorf("allocateLoadBalancerNodePorts false: %v", err)
	} else if got.Spec.Ports[0].NodePort != 0 {
		t.Errorf("allocateLoadBalancerNodePorts false: got node port %d", got.Spec.Ports[0].NodePort)
	}
	stray := service("stray", "NodePort", "")
	stray.Spec.HealthCheckNodePort = 31999
	if _, err := svcs.Create(ctx, stray, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("healthCheckNodePort on a NodePort Service: %v, want Invalid", err)
	}

	// A node port the client changes in the same request is its own: kept,
	// and refused by validation for a ClusterIP Service.
	other, err := svcs.Create(ctx, service("other", "NodePort", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved := other.Spec.Ports[0].NodePort + 1
	if moved > 32767 {
		moved = other.Spec.Ports[0].NodePort - 1
	}
	body := fmt.Sprintf(`{"spec":{"type":"ClusterIP","ports":[{"port":80,"protocol":"TCP","nodePort":%d}]}}`, moved)
	if _, err := patch("other", body); !apierrors.IsInvalid(err) {
		t.Errorf("ClusterIP with a new node port: %v, want Invalid", err)
	}
}

// TestServiceLoadBalancerSourceRanges: a Service's loadBalancerSourceRanges
// (and the older annotation) are judged as v1.33 judges them, with its
// messages: only a LoadBalancer may have them, and each must be a CIDR.
func TestServiceLoadBalancerSourceRanges(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	for _, tc := range []struct {
		name, typ string
		ranges    []string
		ann       string
		msg       string // "" means created
	}{
		{"CIDRs on a LoadBalancer", "LoadBalancer", []string{"10.0.0.0/8", " 192.168.1.5/24"}, "", ""},
		{"not a CIDR", "LoadBalancer", []string{"10.0.0.0/8", "10.0.0.1"}, "",
			`Service "not-a-cidr" is invalid: spec.LoadBalancerSourceRanges[1]: Invalid value: "10.0.0.1": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},
		{"on a ClusterIP Service", "ClusterIP", []string{"10.0.0.0/8"}, "",
			"Service \"on-a-clusterip-service\" is invalid: spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"},
		{"annotation not a CIDR", "LoadBalancer", nil, "10.0.0.0/8,nope",
			`Service "annotation-not-a-cidr" is invalid: metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(strings.ReplaceAll(strings.ToLower(tc.name), " ", "-"), tc.typ, "")
			svc.Spec.LoadBalancerSourceRanges = tc.ranges
			if tc.ann != "" {
				svc.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: tc.ann}
			}
			_, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || err.Error() != tc.msg {
				t.Fatalf("create: %v\nwant Invalid: %s", err, tc.msg)
			}
		})
	}
	// A LoadBalancer that becomes a ClusterIP Service must drop its ranges.
	_, err := svcs.Patch(ctx, "cidrs-on-a-loadbalancer", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'") {
		t.Errorf("LoadBalancer -> ClusterIP keeping the ranges: %v, want Invalid", err)
	}
	if _, err := svcs.Patch(ctx, "cidrs-on-a-loadbalancer", types.MergePatchType,
		[]byte(`{"spec":{"type":"ClusterIP","loadBalancerSourceRanges":null}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("LoadBalancer -> ClusterIP dropping the ranges: %v", err)
	}
}

// TestServiceDryRunRefusesTakenAllocations: a server-side dry run (kubectl
// --dry-run=server, kubectl diff) of a Service asking for a cluster IP, node
// port or health check node port another Service holds fails as the real
// write would, with Invalid, as Kubernetes' dry-run allocators check what
// they would take; it still takes nothing, so a free one stays free.
func TestServiceDryRunRefusesTakenAllocations(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	held := service("held", "LoadBalancer", "")
	held.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	held, err := svcs.Create(ctx, held, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, port, hc := held.Spec.ClusterIP, held.Spec.Ports[0].NodePort, held.Spec.HealthCheckNodePort
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	sameIP := service("same-ip", "ClusterIP", ip)
	if _, err := svcs.Create(ctx, sameIP, dry); !apierrors.IsInvalid(err) {
		t.Errorf("dry-run create with held's cluster IP %s: %v, want Invalid", ip, err)
	}
	samePort := service("same-port", "NodePort", "")
	samePort.Spec.Ports[0].NodePort = port
	if _, err := svcs.Create(ctx, samePort, dry); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ports[0].nodePort") {
		t.Errorf("dry-run create with held's node port %d: %v, want Invalid on spec.ports[0].nodePort", port, err)
	}
	sameHC := service("same-hc", "LoadBalancer", "")
	sameHC.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	sameHC.Spec.HealthCheckNodePort = hc
	if _, err := svcs.Create(ctx, sameHC, dry); !apierrors.IsInvalid(err) {
		t.Errorf("dry-run create with held's health check node port %d: %v, want Invalid", hc, err)
	}

	// An update moving another Service onto held's node port, dry run.
	other := service("other", "NodePort", "")
	if other, err = svcs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other.Spec.Ports[0].NodePort = port
	if _, err := svcs.Update(ctx, other, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsInvalid(err) {
		t.Errorf("dry-run update onto held's node port %d: %v, want Invalid", port, err)
	}

	// Free ones pass, and stay free.
	freeIP := "10.43.201.201"
	free := service("free", "NodePort", freeIP)
	free.Spec.Ports[0].NodePort = 30999
	if _, err := svcs.Create(ctx, free, dry); err != nil {
		t.Fatalf("dry-run create with a free IP and port: %v", err)
	}
	if _, err := svcs.Get(ctx, "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry run stored the Service: %v", err)
	}
	if _, err := svcs.Create(ctx, free, metav1.CreateOptions{}); err != nil {
		t.Errorf("the dry run took %s or 30999: %v", freeIP, err)
	}
}

// TestServiceDryRunRefusalReadsAsTheWrite: a dry run refused for a taken
// cluster IP or node port says what the real write says (Kubernetes' dry-run
// allocators return the real ones' errors), not a second, doubled wording.
func TestServiceDryRunRefusalReadsAsTheWrite(t *testing.T) {
	cs, _ := clientset(t)
	ctx := context.Background()
	svcs := cs.CoreV1().Services("default")
	held, err := svcs.Create(ctx, service("held", "NodePort", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for name, svc := range map[string]*corev1.Service{
		"same-ip": service("same-ip", "ClusterIP", held.Spec.ClusterIP),
		"same-port": func() *corev1.Service {
			s := service("same-port", "NodePort", "")
			s.Spec.Ports[0].NodePort = held.Spec.Ports[0].NodePort
			return s
		}(),
	} {
		_, dryErr := svcs.Create(ctx, svc.DeepCopy(), dry)
		_, realErr := svcs.Create(ctx, svc.DeepCopy(), metav1.CreateOptions{})
		if !apierrors.IsInvalid(dryErr) || !apierrors.IsInvalid(realErr) {
			t.Fatalf("%s: dry run %v, write %v; want both Invalid", name, dryErr, realErr)
		}
		if dryErr.Error() != realErr.Error() {
			t.Errorf("%s: dry run says\n  %v\nthe write says\n  %v", name, dryErr, realErr)
		}
	}
}
