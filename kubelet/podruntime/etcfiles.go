package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// hostResolvConf is the node's resolver configuration that pods inherit
// until cluster DNS exists (dnsPolicy Default behaviour).
const hostResolvConf = "/etc/resolv.conf"

func podHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// writeEtcFiles writes the pod's /etc/hosts (localhost, the pod's own
// name on its IP, hostAliases) and its /etc/resolv.conf (the node's, plus
// dnsConfig), which every container of the pod mounts, as on Kubernetes.
func (r *Runtime) writeEtcFiles(pod *corev1.Pod, podIP string) error {
	dir := filepath.Join(r.podPath(pod.UID), "etc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var hosts strings.Builder
	hosts.WriteString("# Kubernetes-managed hosts file (skiff).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if !pod.Spec.HostNetwork {
		name := podHostname(pod)
		if pod.Spec.Subdomain != "" {
			fmt.Fprintf(&hosts, "%s\t%s.%s.%s.svc.cluster.local\t%s\n", podIP, name, pod.Spec.Subdomain, pod.Namespace, name)
		} else {
			fmt.Fprintf(&hosts, "%s\t%s\n", podIP, name)
		}
	}
	for _, a := range pod.Spec.HostAliases {
		fmt.Fprintf(&hosts, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	if err := writeIfChanged(filepath.Join(dir, "hosts"), hosts.String()); err != nil {
		return err
	}
	resolv, err := os.ReadFile(hostResolvConf)
	if err != nil {
		resolv = nil // a node without resolv.conf gives pods an empty one
	}
	out := string(resolv)
	if dc := pod.Spec.DNSConfig; dc != nil {
		if len(dc.Nameservers) > 0 {
			out = "nameserver " + strings.Join(dc.Nameservers, "\nnameserver ") + "\n" + out
		}
		if len(dc.Searches) > 0 {
			out += "search " + strings.Join(dc.Searches, " ") + "\n"
		}
		var opts []string
		for _, o := range dc.Options {
			if o.Value != nil {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		if len(opts) > 0 {
			out += "options " + strings.Join(opts, " ") + "\n"
		}
	}
	return writeIfChanged(filepath.Join(dir, "resolv.conf"), out)
}

func writeIfChanged(path, content string) error {
	if b, err := os.ReadFile(path); err == nil && string(b) == content {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// etcMounts binds the pod's hosts and resolv.conf into a container unless
// one of its volumes already mounts that path.
func (r *Runtime) etcMounts(pod *corev1.Pod, existing []krt.Mount) []krt.Mount {
	taken := map[string]bool{}
	for _, m := range existing {
		taken[m.ContainerPath] = true
	}
	dir := filepath.Join(r.podPath(pod.UID), "etc")
	var out []krt.Mount
	for _, f := range []string{"hosts", "resolv.conf"} {
		if !taken["/etc/"+f] {
			out = append(out, krt.Mount{HostPath: filepath.Join(dir, f), ContainerPath: "/etc/" + f, ReadOnly: true})
		}
	}
	return out
}
