package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// RuntimeHandlerLister is a runtime that says which runtime handlers it
// has and what each supports, as a CRI runtime answers the kubelet's
// Status call. The node status lists them (status.runtimeHandlers), and
// read-only mounts asking for recursiveReadOnly are resolved against the
// default handler's (named ""; skiff has no RuntimeClasses), as the
// kubelet resolves them. A runtime without it reports no handler and
// supports no recursive read-only mount, as the kubelet treats a runtime
// that lists no handlers.
type RuntimeHandlerLister interface {
	RuntimeHandlers() []corev1.NodeRuntimeHandler
}

// supportsRecursiveReadOnly says whether rt's default runtime handler
// makes recursively read-only mounts.
func supportsRecursiveReadOnly(rt Runtime) bool {
	l, ok := rt.(RuntimeHandlerLister)
	if !ok {
		return false
	}
	for _, h := range l.RuntimeHandlers() {
		if h.Name == "" {
			return h.Features != nil && h.Features.RecursiveReadOnlyMounts != nil && *h.Features.RecursiveReadOnlyMounts
		}
	}
	return false
}

// recursiveReadOnly says whether the runtime's default handler makes
// recursively read-only mounts (container statuses report it). It is
// asked once the runtime is there — a DeferredRuntime's once it opens,
// before which no container runs — and remembered.
func (a *Agent) recursiveReadOnly() bool {
	if v := a.rro.Load(); v != nil {
		return *v
	}
	if d, ok := a.runtime.(*DeferredRuntime); ok && d.Opened() == nil {
		return false
	}
	v := supportsRecursiveReadOnly(a.runtime)
	a.rro.Store(&v)
	return v
}

// ResolveRecursiveReadOnly decides, as the v1.33 kubelet does, whether a
// volume mount is to be made recursively read-only on a runtime handler
// that supports it or not: IfPossible follows the support, Enabled
// without it is an error (the container does not start; its status
// waits with CreateContainerConfigError and this message), as is a mode
// the API server should have refused. Runtimes make the mount with it and
// container statuses report it, so the two agree.
func ResolveRecursiveReadOnly(m corev1.VolumeMount, supported bool) (bool, error) {
	rro, err := resolveRecursiveReadOnly(m, supported)
	if err != nil {
		return false, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
	}
	return rro, nil
}

func resolveRecursiveReadOnly(m corev1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q", m.Name, *m.MountPropagation)
	}
	switch mode := *m.RecursiveReadOnly; mode {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// DefaultRuntimeHandlers are the handlers of a runtime of skiff's: one,
// the default (skiff has no RuntimeClasses), as containerd's CRI plugin
// reports its runc handler, with recursive read-only mounts as rro says
// and no user namespaces, which skiff does not implement: pods asking for
// one are refused (sandboxConfigRefusal).
func DefaultRuntimeHandlers(rro bool) []corev1.NodeRuntimeHandler {
	userns := false
	return []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}}}
}
