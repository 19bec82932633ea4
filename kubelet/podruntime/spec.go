package podruntime

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/kubelet/agent"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// errConfig marks a spec the agent cannot run as given; the container waits
// with reason CreateContainerConfigError and the message says why.
var errConfig = errors.New("container configuration")

// kubeletConfigError is an errConfig worded as the kubelet words it, its
// message the status's as it is, without errConfig's prefix.
type kubeletConfigError string

func (e kubeletConfigError) Error() string        { return string(e) }
func (e kubeletConfigError) Is(target error) bool { return target == errConfig }

// envResolver resolves an env entry whose value comes from a ConfigMap or
// Secret key; ok is false for a missing optional key.
type envResolver func(e corev1.EnvVar) (value string, ok bool, err error)

// envFor resolves a container's environment: the envFrom entries (from),
// then env — literal values with $(VAR) references to earlier variables
// expanded as Kubernetes does, the downward API fields, and keys of
// ConfigMaps and Secrets through resolve. A later variable replaces an
// earlier one of the same name.
func envFor(pod *corev1.Pod, c *corev1.Container, podIP string, from [][2]string, resolve envResolver) ([]string, error) {
	seen := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := seen[k]; !ok {
			order = append(order, k)
		}
		seen[k] = v
	}
	for _, kv := range from {
		set(kv[0], kv[1])
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, expand(e.Value, seen))
		case e.ValueFrom.FieldRef != nil:
			v, err := fieldRef(pod, e.ValueFrom.FieldRef.FieldPath, podIP)
			if err != nil {
				return nil, fmt.Errorf("%w: env %s: %w", errConfig, e.Name, err)
			}
			set(e.Name, v)
		case resolve == nil:
			return nil, fmt.Errorf("%w: env %s: only literal values and fieldRef can be resolved here", errConfig, e.Name)
		default:
			v, ok, err := resolve(e)
			if err != nil {
				return nil, err
			}
			if ok {
				set(e.Name, v)
			}
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+seen[k])
	}
	return out, nil
}

func fieldRef(pod *corev1.Pod, path, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, nil
	}
	// One label or annotation, as metadata.labels['key']: the Job
	// controller hands indexed pods JOB_COMPLETION_INDEX this way. A key the
	// pod lacks resolves to "", as in the kubelet.
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// subscript returns key when path is field['key'].
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// expand replaces $(NAME) with earlier variables' values; $$ escapes a
// dollar; unknown references stay as written (Kubernetes' rules).
func expand(s string, vars map[string]string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			out = append(out, s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out = append(out, '$')
			i++
		case '(':
			end := -1
			for j := i + 2; j < len(s); j++ {
				if s[j] == ')' {
					end = j
					break
				}
			}
			if end < 0 {
				out = append(out, s[i])
				continue
			}
			name := s[i+2 : end]
			if v, ok := vars[name]; ok {
				out = append(out, v...)
			} else {
				out = append(out, s[i:end+1]...)
			}
			i = end
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// expandAll applies expand to command and args with the container's env.
func expandAll(in []string, env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				vars[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

// resourcesFor maps requests and limits onto cgroup settings as the kubelet
// does: shares from the CPU request (limit if no request), CFS quota from
// the CPU limit over a 100ms period, the memory limit as is.
func resourcesFor(c *corev1.Container) krt.Resources {
	var r krt.Resources
	cpuReq, hasReq := c.Resources.Requests[corev1.ResourceCPU]
	cpuLim, hasLim := c.Resources.Limits[corev1.ResourceCPU]
	if !hasReq && hasLim {
		cpuReq, hasReq = cpuLim, true
	}
	if hasReq {
		shares := uint64(cpuReq.MilliValue()) * 1024 / 1000
		if shares < 2 {
			shares = 2
		}
		r.CPUShares = shares
	}
	if hasLim {
		const period = 100000
		quota := cpuLim.MilliValue() * period / 1000
		if quota < 1000 {
			quota = 1000 // the kernel's minimum
		}
		r.CPUQuota, r.CPUPeriod = quota, period
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimit = mem.Value()
	}
	return r
}

// securityFor merges the pod's and the container's security contexts
// (the container's wins).
func securityFor(pod *corev1.Pod, c *corev1.Container) krt.Security {
	var s krt.Security
	if psc := pod.Spec.SecurityContext; psc != nil {
		s.RunAsUser, s.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
	}
	sc := c.SecurityContext
	if sc == nil {
		return s
	}
	if sc.RunAsUser != nil {
		s.RunAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		s.RunAsGroup = sc.RunAsGroup
	}
	if sc.ReadOnlyRootFilesystem != nil {
		s.ReadOnlyRootFilesystem = *sc.ReadOnlyRootFilesystem
	}
	if sc.Privileged != nil {
		s.Privileged = *sc.Privileged
	}
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Add {
			s.AddCapabilities = append(s.AddCapabilities, string(c))
		}
		for _, c := range sc.Capabilities.Drop {
			s.DropCapabilities = append(s.DropCapabilities, string(c))
		}
	}
	return s
}

// mountsFor binds the pod's volumes: emptyDir and hostPath, the
// configMap, secret, downwardAPI and projected volumes written under the
// pod directory, and persistentVolumeClaim volumes at the directories in
// claims (failed holds those that could not be written or resolved). Other
// kinds are reported as unsupported rather than silently left out. A
// read-only mount asking for recursiveReadOnly is resolved as the kubelet
// does against rro, whether the runtime can make one.
func mountsFor(pod *corev1.Pod, c *corev1.Container, podDir string, failed map[string]error, claims map[string]string, rro bool) ([]krt.Mount, error) {
	vols := map[string]*corev1.Volume{}
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []krt.Mount
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("%w: volume mount %q names no volume of the pod", errConfig, vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			return nil, fmt.Errorf("%w: volume mount %q: subPath is not supported by this agent yet", errConfig, vm.Name)
		}
		var host string
		switch {
		case v.EmptyDir != nil:
			host = emptyDirPath(podDir, v.Name)
		case v.HostPath != nil:
			host = v.HostPath.Path
		case v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil:
			if err := failed[v.Name]; err != nil {
				if errors.Is(err, errConfig) {
					return nil, err
				}
				return nil, fmt.Errorf("%w: volume %q: %w", errConfig, v.Name, err)
			}
			host = objectVolumePath(podDir, v.Name)
		case v.PersistentVolumeClaim != nil:
			if err := failed[v.Name]; err != nil {
				if errors.Is(err, errConfig) {
					return nil, err
				}
				return nil, fmt.Errorf("%w: volume %q: %w", errConfig, v.Name, err)
			}
			if host = claims[v.Name]; host == "" {
				return nil, fmt.Errorf("%w: volume %q: persistentvolumeclaim %q not resolved", errConfig, v.Name, v.PersistentVolumeClaim.ClaimName)
			}
		default:
			return nil, fmt.Errorf("%w: volume %q: only emptyDir, hostPath, configMap, secret, downwardAPI, projected and persistentVolumeClaim volumes are supported by this agent yet", errConfig, v.Name)
		}
		recursive, err := agent.ResolveRecursiveReadOnly(vm, rro)
		if err != nil {
			return nil, kubeletConfigError(err.Error())
		}
		readOnly := vm.ReadOnly || v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
		out = append(out, krt.Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: readOnly, RecursiveReadOnly: recursive})
	}
	return out, nil
}

func emptyDirPath(podDir, volume string) string {
	return filepath.Join(podDir, "volumes", "empty-dir", volume)
}

// logPath follows the kubelet's layout so log tooling finds the files:
// <logDir>/<namespace>_<name>_<uid>/<container>/<attempt>.log.
func logPath(logDir string, pod *corev1.Pod, container string, attempt int) string {
	return filepath.Join(logDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), container, strconv.Itoa(attempt)+".log")
}

func pullPolicy(c *corev1.Container) krt.PullPolicy {
	switch c.ImagePullPolicy {
	case corev1.PullAlways:
		return krt.PullAlways
	case corev1.PullNever:
		return krt.PullNever
	default:
		return krt.PullIfNotPresent
	}
}
