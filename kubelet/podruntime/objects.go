package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ObjectGetter reads the ConfigMaps and Secrets that env and volumes refer
// to (the agent passes its informers' listers or a clientset). A missing
// object is an apierrors NotFound error.
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// source is a ConfigMap's or a Secret's data as bytes.
type source map[string][]byte

func (r *Runtime) configMap(ctx context.Context, ns, name string) (source, error) {
	if r.objects == nil {
		return nil, fmt.Errorf("%w: configMap %q: this agent has no access to ConfigMaps", errConfig, name)
	}
	cm, err := r.objects.GetConfigMap(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	s := source{}
	for k, v := range cm.Data {
		s[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		s[k] = v
	}
	return s, nil
}

func (r *Runtime) secret(ctx context.Context, ns, name string) (source, error) {
	if r.objects == nil {
		return nil, fmt.Errorf("%w: secret %q: this agent has no access to Secrets", errConfig, name)
	}
	sec, err := r.objects.GetSecret(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	s := source{}
	for k, v := range sec.Data {
		s[k] = v
	}
	for k, v := range sec.StringData {
		s[k] = []byte(v)
	}
	return s, nil
}

// lookup fetches a source, treating a missing optional one as empty.
func lookup(get func() (source, error), what string, optional *bool) (source, error) {
	s, err := get()
	if err != nil && apierrors.IsNotFound(err) && optional != nil && *optional {
		return source{}, nil
	}
	if err != nil {
		if errors.Is(err, errConfig) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %w", errConfig, what, err)
	}
	return s, nil
}

// objectEnv resolves envFrom and the configMapKeyRef/secretKeyRef entries
// of env; the result maps names to values, in envFrom's then env's order.
func (r *Runtime) objectEnv(ctx context.Context, pod *corev1.Pod, e corev1.EnvVar) (string, bool, error) {
	vf := e.ValueFrom
	var sel *corev1.LocalObjectReference
	var key string
	var optional *bool
	var get func() (source, error)
	switch {
	case vf.ConfigMapKeyRef != nil:
		sel, key, optional = &vf.ConfigMapKeyRef.LocalObjectReference, vf.ConfigMapKeyRef.Key, vf.ConfigMapKeyRef.Optional
		get = func() (source, error) { return r.configMap(ctx, pod.Namespace, sel.Name) }
	case vf.SecretKeyRef != nil:
		sel, key, optional = &vf.SecretKeyRef.LocalObjectReference, vf.SecretKeyRef.Key, vf.SecretKeyRef.Optional
		get = func() (source, error) { return r.secret(ctx, pod.Namespace, sel.Name) }
	default:
		return "", false, fmt.Errorf("%w: env %s: only literal values, fieldRef, configMapKeyRef and secretKeyRef are supported", errConfig, e.Name)
	}
	s, err := lookup(get, fmt.Sprintf("env %s: %q", e.Name, sel.Name), optional)
	if err != nil {
		return "", false, err
	}
	v, ok := s[key]
	if !ok {
		if optional != nil && *optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%w: couldn't find key %s in %q", errConfig, key, sel.Name)
	}
	return string(v), true, nil
}

func (r *Runtime) envFromSources(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([][2]string, error) {
	var out [][2]string
	for _, ef := range c.EnvFrom {
		var s source
		var err error
		switch {
		case ef.ConfigMapRef != nil:
			s, err = lookup(func() (source, error) { return r.configMap(ctx, pod.Namespace, ef.ConfigMapRef.Name) },
				fmt.Sprintf("envFrom configMap %q", ef.ConfigMapRef.Name), ef.ConfigMapRef.Optional)
		case ef.SecretRef != nil:
			s, err = lookup(func() (source, error) { return r.secret(ctx, pod.Namespace, ef.SecretRef.Name) },
				fmt.Sprintf("envFrom secret %q", ef.SecretRef.Name), ef.SecretRef.Optional)
		default:
			return nil, fmt.Errorf("%w: envFrom entry names no source", errConfig)
		}
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, [2]string{ef.Prefix + k, string(s[k])})
		}
	}
	return out, nil
}

// writeVolumes writes the content of the pod's configMap, secret,
// downwardAPI and projected volumes under the pod directory; called on
// every sync so that changed objects reach running containers, as on
// Kubernetes. A volume that cannot be written is reported by name.
func (r *Runtime) writeVolumes(ctx context.Context, pod *corev1.Pod, podIP string) map[string]error {
	failed := map[string]error{}
	for _, v := range pod.Spec.Volumes {
		files, mode, err := r.volumeFiles(ctx, pod, podIP, v)
		if err != nil {
			failed[v.Name] = err
			continue
		}
		if files == nil {
			continue // not a generated volume
		}
		if err := syncDir(objectVolumePath(r.podPath(pod.UID), v.Name), files, mode); err != nil {
			failed[v.Name] = err
		}
	}
	return failed
}

type file struct {
	data []byte
	mode fs.FileMode
}

func modeOr(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & 0o777
}

// project picks the keys of s (all, or the listed items) as files.
func project(s source, items []corev1.KeyToPath, mode fs.FileMode, optional *bool, name string, into map[string]file) error {
	if len(items) == 0 {
		for k, v := range s {
			into[k] = file{v, mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := s[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return fmt.Errorf("%w: couldn't find key %s in %q", errConfig, it.Key, name)
		}
		into[it.Path] = file{v, modeOr(it.Mode, mode)}
	}
	return nil
}

func (r *Runtime) volumeFiles(ctx context.Context, pod *corev1.Pod, podIP string, v corev1.Volume) (map[string]file, fs.FileMode, error) {
	files := map[string]file{}
	switch {
	case v.ConfigMap != nil:
		mode := modeOr(v.ConfigMap.DefaultMode, 0o644)
		s, err := lookup(func() (source, error) { return r.configMap(ctx, pod.Namespace, v.ConfigMap.Name) },
			fmt.Sprintf("volume %s: configMap %q", v.Name, v.ConfigMap.Name), v.ConfigMap.Optional)
		if err != nil {
			return nil, 0, err
		}
		return files, mode, project(s, v.ConfigMap.Items, mode, v.ConfigMap.Optional, v.ConfigMap.Name, files)
	case v.Secret != nil:
		mode := modeOr(v.Secret.DefaultMode, 0o644)
		s, err := lookup(func() (source, error) { return r.secret(ctx, pod.Namespace, v.Secret.SecretName) },
			fmt.Sprintf("volume %s: secret %q", v.Name, v.Secret.SecretName), v.Secret.Optional)
		if err != nil {
			return nil, 0, err
		}
		return files, mode, project(s, v.Secret.Items, mode, v.Secret.Optional, v.Secret.SecretName, files)
	case v.DownwardAPI != nil:
		mode := modeOr(v.DownwardAPI.DefaultMode, 0o644)
		return files, mode, downwardFiles(pod, podIP, v.DownwardAPI.Items, mode, files)
	case v.Projected != nil:
		mode := modeOr(v.Projected.DefaultMode, 0o644)
		for _, src := range v.Projected.Sources {
			var err error
			switch {
			case src.ConfigMap != nil:
				var s source
				if s, err = lookup(func() (source, error) { return r.configMap(ctx, pod.Namespace, src.ConfigMap.Name) },
					fmt.Sprintf("volume %s: configMap %q", v.Name, src.ConfigMap.Name), src.ConfigMap.Optional); err == nil {
					err = project(s, src.ConfigMap.Items, mode, src.ConfigMap.Optional, src.ConfigMap.Name, files)
				}
			case src.Secret != nil:
				var s source
				if s, err = lookup(func() (source, error) { return r.secret(ctx, pod.Namespace, src.Secret.Name) },
					fmt.Sprintf("volume %s: secret %q", v.Name, src.Secret.Name), src.Secret.Optional); err == nil {
					err = project(s, src.Secret.Items, mode, src.Secret.Optional, src.Secret.Name, files)
				}
			case src.DownwardAPI != nil:
				err = downwardFiles(pod, podIP, src.DownwardAPI.Items, mode, files)
			case src.ServiceAccountToken != nil:
				err = r.tokenFile(ctx, pod, src.ServiceAccountToken, mode, files)
			default:
				err = fmt.Errorf("%w: volume %s: only configMap, secret, downwardAPI and serviceAccountToken projections are supported by this agent yet", errConfig, v.Name)
			}
			if err != nil {
				return nil, 0, err
			}
		}
		return files, mode, nil
	}
	return nil, 0, nil
}

// tokenFile writes the pod's service account token (kept fresh by the
// token manager) at the projection's path.
func (r *Runtime) tokenFile(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection, mode fs.FileMode, into map[string]file) error {
	if r.tokens == nil {
		return fmt.Errorf("%w: serviceAccountToken %s: this agent cannot request tokens", errConfig, p.Path)
	}
	tok, err := r.tokens.Token(ctx, pod, p)
	if err != nil {
		return fmt.Errorf("%w: serviceAccountToken %s: %w", errConfig, p.Path, err)
	}
	into[p.Path] = file{[]byte(tok), mode}
	return nil
}

func downwardFiles(pod *corev1.Pod, podIP string, items []corev1.DownwardAPIVolumeFile, mode fs.FileMode, into map[string]file) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("%w: downwardAPI %s: only fieldRef items are supported by this agent yet", errConfig, it.Path)
		}
		var v string
		switch it.FieldRef.FieldPath {
		case "metadata.labels":
			v = formatMap(pod.Labels)
		case "metadata.annotations":
			v = formatMap(pod.Annotations)
		default:
			var err error
			if v, err = fieldRef(pod, it.FieldRef.FieldPath, podIP); err != nil {
				return fmt.Errorf("%w: downwardAPI %s: %w", errConfig, it.Path, err)
			}
		}
		into[it.Path] = file{[]byte(v), modeOr(it.Mode, mode)}
	}
	return nil
}

// formatMap renders labels or annotations as the kubelet does: key="value" lines, sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

func objectVolumePath(podDir, volume string) string {
	return filepath.Join(podDir, "volumes", "objects", volume)
}

// syncDir makes dir hold exactly files: changed files are replaced by
// rename (a reader never sees half a file), files no longer wanted go.
func syncDir(dir string, files map[string]file, _ fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	wanted := map[string]bool{}
	for p, f := range files {
		clean := filepath.Clean(p)
		wanted[clean] = true
		if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") {
			return fmt.Errorf("%w: volume file path %q must be relative and stay inside the volume", errConfig, p)
		}
		target := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if b, err := os.ReadFile(target); err == nil && string(b) == string(f.data) {
			if err := os.Chmod(target, f.mode); err != nil {
				return err
			}
			continue
		}
		tmp := target + ".skiff-tmp"
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, target); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !wanted[rel] {
			return os.Remove(p)
		}
		return nil
	})
}
