package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// inClusterNames are the names pods use for the API server through the
// default "kubernetes" Service.
var inClusterNames = []string{
	"kubernetes",
	"kubernetes.default",
	"kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

// sanSet is a deduplicated list of DNS names and IP addresses.
type sanSet struct {
	dns []string
	ips []net.IP
}

func (s *sanSet) add(v string) error {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	if ip := net.ParseIP(v); ip != nil {
		s.addIP(ip)
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(v, "."))
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		// A wildcard like *.example.com is valid in a certificate.
		if !strings.HasPrefix(name, "*.") || len(validation.IsDNS1123Subdomain(name[2:])) > 0 {
			return fmt.Errorf("pki: subject alternative name %q is neither an IP address nor a DNS name: %s", v, strings.Join(errs, "; "))
		}
	}
	if !slices.Contains(s.dns, name) {
		s.dns = append(s.dns, name)
	}
	return nil
}

func (s *sanSet) addIP(ip net.IP) {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	for _, have := range s.ips {
		if have.Equal(ip) {
			return
		}
	}
	s.ips = append(s.ips, ip)
}

// coveredBy reports whether cert carries every name and address in s.
func (s sanSet) coveredBy(cert *x509.Certificate) bool {
	for _, name := range s.dns {
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, name) }) {
			return false
		}
	}
	for _, ip := range s.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// wantedSANs lists what the serving certificate must carry: loopback names,
// the in-cluster service names, this host's name and addresses, and extras.
func wantedSANs(extra []string) (sanSet, error) {
	var s sanSet
	for _, v := range append([]string{"localhost", "127.0.0.1", "::1"}, inClusterNames...) {
		if err := s.add(v); err != nil {
			return s, err
		}
	}
	if host, err := os.Hostname(); err == nil {
		// A host name that is not a valid DNS name (rare, but allowed by
		// the kernel) cannot go into a certificate; leave it out rather than
		// refuse to start.
		_ = s.add(host)
	}
	for _, ip := range hostAddresses() {
		s.addIP(ip)
	}
	for _, v := range extra {
		if err := s.add(v); err != nil {
			return s, err
		}
	}
	return s, nil
}

// hostAddresses returns the addresses of this host's interfaces, without
// IPv6 link-local ones: those need a zone and no client dials them by name.
func hostAddresses() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.IsLinkLocalUnicast() || ipnet.IP.IsLinkLocalMulticast() {
			continue
		}
		out = append(out, ipnet.IP)
	}
	return out
}
