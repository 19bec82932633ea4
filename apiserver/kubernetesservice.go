package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffkube/skiff/apiserver/allocator"
	"github.com/skiffkube/skiff/apiserver/endpoints"
	"github.com/skiffkube/skiff/storage"
)

// masterLeasePrefix holds one TTL key per live API server, named by its
// advertised address (Kubernetes' lease endpoint reconciler keeps the same
// under /registry/masterleases/). The kubernetes Endpoints list exactly the
// servers whose key has not expired.
const masterLeasePrefix = "/registry/masterleases/"

// keepKubernetesService makes sure the "kubernetes" Service in "default"
// exists with the first IP of the service CIDR, port 443, and that its
// Endpoints and EndpointSlices name the live API servers, each at the port
// its lease records, until ctx ends;
// then it withdraws this server. Pods reach the API through it, as on
// Kubernetes.
func (s *Server) keepKubernetesService(ctx context.Context) {
	interval := s.cfg.EndpointReconcileInterval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.ensureKubernetesService(ctx, 3*interval/2); err != nil && ctx.Err() == nil {
			s.log.Warn("keeping the kubernetes Service", "err", err)
		}
		select {
		case <-ctx.Done():
			s.withdraw()
			return
		case <-t.C:
		}
	}
}

// withdraw removes this server from the kubernetes endpoints at shutdown,
// so clients stop being sent to it before its lease would expire.
func (s *Server) withdraw() {
	st, ok := s.cfg.Store.(*storage.Store)
	if !ok || s.services == nil {
		return
	}
	addr, port, err := s.advertised()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(storage.WithActor(context.Background(), bootstrapActor), 2*time.Second)
	defer cancel()
	if _, _, err := st.Delete(ctx, masterLeasePrefix+addr, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return
	}
	if err := s.ensureEndpoints(ctx, st, port); err == nil {
		_ = s.ensureEndpointSlice(ctx, st, port)
	}
}

// renewLease writes this server's master lease with a TTL.
func renewLease(ctx context.Context, st *storage.Store, addr string, port int32, ttl time.Duration) error {
	key := masterLeasePrefix + addr
	data, err := json.Marshal(map[string]any{"ip": addr, "port": port})
	if err != nil {
		return err
	}
	_, err = st.Update(ctx, key, data, 0, ttl)
	if errors.Is(err, storage.ErrNotFound) {
		if _, err = st.Create(ctx, key, data, ttl); errors.Is(err, storage.ErrKeyExists) {
			err = nil // another renewal got there first
		}
	}
	return err
}

// apiEndpoint is one live API server: its address and the port it serves
// on, as its master lease records them.
type apiEndpoint struct {
	ip   string
	port int32
}

// liveServers are the API servers whose lease is current, sorted by
// address. A lease without a port (written by an older skiff) is taken to
// serve on defaultPort, this server's port.
func liveServers(ctx context.Context, st *storage.Store, defaultPort int32) ([]apiEndpoint, error) {
	l, err := st.List(ctx, storage.ListOptions{Prefix: masterLeasePrefix})
	if err != nil {
		return nil, err
	}
	var out []apiEndpoint
	for _, kv := range l.KVs {
		e := apiEndpoint{ip: strings.TrimPrefix(kv.Key, masterLeasePrefix), port: defaultPort}
		var lease struct {
			Port int32 `json:"port"`
		}
		if json.Unmarshal(kv.Value, &lease) == nil && lease.Port > 0 {
			e.port = lease.Port
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b apiEndpoint) int { return strings.Compare(a.ip, b.ip) })
	return out, nil
}

// byPort groups live servers by port: the port most servers use first
// (the lower on a tie), so every server computes the same grouping.
func byPort(live []apiEndpoint) [][]apiEndpoint {
	groups := map[int32][]apiEndpoint{}
	for _, e := range live {
		groups[e.port] = append(groups[e.port], e)
	}
	out := make([][]apiEndpoint, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []apiEndpoint) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return int(a[0].port) - int(b[0].port)
	})
	return out
}

func (s *Server) ensureKubernetesService(ctx context.Context, leaseTTL time.Duration) error {
	st, ok := s.cfg.Store.(*storage.Store)
	if !ok || s.services == nil {
		return nil
	}
	ctx = storage.WithActor(ctx, bootstrapActor)
	addr, port, err := s.advertised()
	if err != nil {
		return err
	}
	if err := s.ensureServiceObject(ctx, st); err != nil {
		return err
	}
	if err := renewLease(ctx, st, addr, port, leaseTTL); err != nil {
		return err
	}
	if err := s.ensureEndpoints(ctx, st, port); err != nil {
		return err
	}
	return s.ensureEndpointSlice(ctx, st, port)
}

// advertised is the address and port other machines reach this server at:
// the bind address, or the host's first global address when bound to all.
func (s *Server) advertised() (string, int32, error) {
	ap, err := netip.ParseAddrPort(s.listener.Addr().String())
	if err != nil {
		return "", 0, err
	}
	ip := ap.Addr().Unmap()
	if ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					if cand, ok := netip.AddrFromSlice(n.IP); ok && cand.Unmap().Is4() && cand.IsGlobalUnicast() {
						ip = cand.Unmap()
						break
					}
				}
			}
		}
	}
	return ip.String(), int32(ap.Port()), nil
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID(uuid.NewString()),
		CreationTimestamp: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
	}
}

func (s *Server) ensureServiceObject(ctx context.Context, st *storage.Store) error {
	key := "/registry/services/default/kubernetes"
	if _, err := st.Get(ctx, key, 0); err == nil {
		return nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	cidr := s.cfg.ServiceCIDR
	if cidr == "" {
		cidr = allocator.DefaultServiceCIDR
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return err
	}
	first := prefix.Masked().Addr().Next().String()
	single, cluster, local := corev1.IPFamilyPolicySingleStack, corev1.ServiceInternalTrafficPolicyCluster, corev1.IPv4Protocol
	if prefix.Addr().Is6() {
		local = corev1.IPv6Protocol
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: objectMeta("kubernetes"),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: first, ClusterIPs: []string{first},
			IPFamilies: []corev1.IPFamily{local}, IPFamilyPolicy: &single, InternalTrafficPolicy: &cluster,
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports:           []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(6443)}},
		},
	}
	svc.Labels = map[string]string{"component": "apiserver", "provider": "kubernetes"}
	alloc, err := s.services.BeforeCreate(ctx, svc)
	if err != nil {
		return fmt.Errorf("allocating %s for the kubernetes Service: %w", first, err)
	}
	data, err := json.Marshal(svc)
	if err != nil {
		alloc.Abort()
		return err
	}
	if _, err := st.Create(ctx, key, data, 0); err != nil {
		alloc.Abort()
		if errors.Is(err, storage.ErrKeyExists) {
			return nil
		}
		return err
	}
	alloc.Commit()
	return nil
}

// ensureEndpoints makes the kubernetes Endpoints list the live servers,
// one subset per port.
func (s *Server) ensureEndpoints(ctx context.Context, st *storage.Store, port int32) error {
	live, err := liveServers(ctx, st, port)
	if err != nil {
		return err
	}
	fresh := func() *corev1.Endpoints {
		return &corev1.Endpoints{TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"}, ObjectMeta: objectMeta("kubernetes")}
	}
	var want []corev1.EndpointSubset
	for _, group := range byPort(live) {
		sub := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: group[0].port, Protocol: corev1.ProtocolTCP}}}
		for _, e := range group {
			sub.Addresses = append(sub.Addresses, corev1.EndpointAddress{IP: e.ip})
		}
		want = append(want, sub)
	}
	// Labelled skip-mirror, as Kubernetes' API server labels it: the EndpointSlice mirroring
	// controller would otherwise copy it next to the slices ensureEndpointSlice writes.
	return casUpdate(ctx, st, "/registry/endpoints/default/kubernetes", fresh, func(ep *corev1.Endpoints) bool {
		if equality.Semantic.DeepEqual(ep.Subsets, want) && ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
			return false
		}
		if ep.Labels == nil {
			ep.Labels = map[string]string{}
		}
		ep.Labels[discoveryv1.LabelSkipMirror] = "true"
		ep.Subsets = want
		ep.ResourceVersion = ""
		return true
	})
}

const endpointSlicePrefix = "/registry/discovery.k8s.io/endpointslices/default/"

// ensureEndpointSlice makes the kubernetes EndpointSlices list the live
// servers. A slice has one port list, so servers on another port than the
// most common one get a slice of their own, "kubernetes-<port>"; such a
// slice goes when no live server uses its port any more.
func (s *Server) ensureEndpointSlice(ctx context.Context, st *storage.Store, port int32) error {
	live, err := liveServers(ctx, st, port)
	if err != nil {
		return err
	}
	groups := byPort(live)
	if len(groups) == 0 {
		groups = [][]apiEndpoint{{{port: port}}} // an empty slice: no ready server
	}
	labels := map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "skiff-apiserver"}
	wanted := map[string]bool{}
	for i, group := range groups {
		name := "kubernetes"
		if i > 0 {
			name = fmt.Sprintf("kubernetes-%d", group[0].port)
		}
		wanted[name] = true
		if err := ensureSlice(ctx, st, name, group, labels); err != nil {
			return err
		}
	}
	l, err := st.List(ctx, storage.ListOptions{Prefix: endpointSlicePrefix + "kubernetes-"})
	if err != nil {
		return err
	}
	for _, kv := range l.KVs {
		var slice discoveryv1.EndpointSlice
		if json.Unmarshal(kv.Value, &slice) != nil || wanted[slice.Name] || !equality.Semantic.DeepEqual(slice.Labels, labels) {
			continue
		}
		if _, _, err := st.Delete(ctx, kv.Key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return nil
}

// ensureSlice makes one kubernetes EndpointSlice list group (servers with
// an empty ip are left out: they only carry the port).
func ensureSlice(ctx context.Context, st *storage.Store, name string, group []apiEndpoint, labels map[string]string) error {
	fresh := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"}, ObjectMeta: objectMeta(name)}
	}
	portName, proto, ready, port := "https", corev1.ProtocolTCP, true, group[0].port
	var endpoints []discoveryv1.Endpoint
	addressType := discoveryv1.AddressTypeIPv4
	for _, e := range group {
		if e.ip == "" {
			continue
		}
		endpoints = append(endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		if ip, err := netip.ParseAddr(e.ip); err == nil && ip.Is6() {
			addressType = discoveryv1.AddressTypeIPv6
		}
	}
	ports := []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}}
	return casUpdate(ctx, st, endpointSlicePrefix+name, fresh, func(slice *discoveryv1.EndpointSlice) bool {
		if equality.Semantic.DeepEqual(slice.Endpoints, endpoints) && equality.Semantic.DeepEqual(slice.Ports, ports) &&
			slice.AddressType == addressType && equality.Semantic.DeepEqual(slice.Labels, labels) {
			return false
		}
		slice.AddressType, slice.Labels, slice.Ports, slice.Endpoints = addressType, labels, ports, endpoints
		slice.ResourceVersion = ""
		return true
	})
}

// casUpdate reads key into an object (fresh() when the key is missing),
// lets change modify it (false: nothing to do) and stores it with a
// compare-and-swap, retrying a few times when another server wrote first.
func casUpdate[T any](ctx context.Context, st endpoints.Store, key string, fresh func() *T, change func(*T) bool) error {
	for attempt := 0; attempt < 5; attempt++ {
		obj := fresh()
		var rev int64
		kv, err := st.Get(ctx, key, 0)
		switch {
		case err == nil:
			if err := json.Unmarshal(kv.Value, obj); err != nil {
				return err
			}
			rev = kv.ModRevision
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		if !change(obj) {
			return nil
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = st.Create(ctx, key, data, 0)
		} else {
			_, err = st.Update(ctx, key, data, rev, 0)
		}
		if err == nil || (!errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrKeyExists)) {
			return err
		}
	}
	return fmt.Errorf("%s kept changing", key)
}
