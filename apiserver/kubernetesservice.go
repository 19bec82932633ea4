package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiffkube/skiff/apiserver/allocator"
	"github.com/skiffkube/skiff/storage"
)

// kubernetesServiceInterval is how often a server re-checks that the
// kubernetes Service and its endpoints list it.
const kubernetesServiceInterval = 10 * time.Second

// keepKubernetesService makes sure the "kubernetes" Service in "default"
// exists with the first IP of the service CIDR, port 443, and that its
// Endpoints and EndpointSlice name this server, until ctx ends. Pods reach
// the API through it, as on Kubernetes.
func (s *Server) keepKubernetesService(ctx context.Context) {
	t := time.NewTicker(kubernetesServiceInterval)
	defer t.Stop()
	for {
		if err := s.ensureKubernetesService(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("keeping the kubernetes Service", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) ensureKubernetesService(ctx context.Context) error {
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
	if err := s.ensureEndpoints(ctx, st, addr, port); err != nil {
		return err
	}
	return s.ensureEndpointSlice(ctx, st, addr, port)
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

// ensureEndpoints adds this server to the kubernetes Endpoints.
func (s *Server) ensureEndpoints(ctx context.Context, st *storage.Store, addr string, port int32) error {
	fresh := func() *corev1.Endpoints {
		return &corev1.Endpoints{TypeMeta: metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"}, ObjectMeta: objectMeta("kubernetes")}
	}
	return casUpdate(ctx, st, "/registry/endpoints/default/kubernetes", fresh, func(ep *corev1.Endpoints) bool {
		if len(ep.Subsets) == 1 && slices.ContainsFunc(ep.Subsets[0].Addresses, func(a corev1.EndpointAddress) bool { return a.IP == addr }) &&
			len(ep.Subsets[0].Ports) == 1 && ep.Subsets[0].Ports[0].Port == port {
			return false
		}
		if len(ep.Subsets) != 1 || len(ep.Subsets[0].Ports) != 1 || ep.Subsets[0].Ports[0].Port != port {
			ep.Subsets = []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}}}}
		}
		ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: addr})
		ep.ResourceVersion = ""
		return true
	})
}

// ensureEndpointSlice adds this server to the kubernetes EndpointSlice.
func (s *Server) ensureEndpointSlice(ctx context.Context, st *storage.Store, addr string, port int32) error {
	fresh := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"}, ObjectMeta: objectMeta("kubernetes")}
	}
	return casUpdate(ctx, st, "/registry/discovery.k8s.io/endpointslices/default/kubernetes", fresh, func(slice *discoveryv1.EndpointSlice) bool {
		if slices.ContainsFunc(slice.Endpoints, func(e discoveryv1.Endpoint) bool { return slices.Contains(e.Addresses, addr) }) &&
			len(slice.Ports) == 1 && slice.Ports[0].Port != nil && *slice.Ports[0].Port == port {
			return false
		}
		name, proto, ready := "https", corev1.ProtocolTCP, true
		slice.AddressType = discoveryv1.AddressTypeIPv4
		if netip.MustParseAddr(addr).Is6() {
			slice.AddressType = discoveryv1.AddressTypeIPv6
		}
		slice.Labels = map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "skiff-apiserver"}
		slice.Ports = []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		slice.ResourceVersion = ""
		return true
	})
}

// casUpdate reads key into an object (fresh() when the key is missing),
// lets change modify it (false: nothing to do) and stores it with a
// compare-and-swap, retrying a few times when another server wrote first.
func casUpdate[T any](ctx context.Context, st *storage.Store, key string, fresh func() *T, change func(*T) bool) error {
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
