package node

import (
	"encoding/json"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/storage"
)

// ClaimPrefix is where persistent volume claims are stored.
const ClaimPrefix = "/registry/persistentvolumeclaims/"

// claims follows which persistent volume each claim is bound to, so that a
// node may read the volumes behind the claims its pods use (Kubernetes'
// node authorizer follows pod → claim → volume the same way).
type claims struct {
	mu     sync.RWMutex
	volume map[string]string // "namespace/name" → spec.volumeName
}

// Reset implements follow.Handler.
func (c *claims) Reset(kvs []*storage.KeyValue) {
	m := map[string]string{}
	for _, kv := range kvs {
		if k, v, ok := claimVolume(kv); ok {
			m[k] = v
		}
	}
	c.mu.Lock()
	c.volume = m
	c.mu.Unlock()
}

// Apply implements follow.Handler.
func (c *claims) Apply(ev storage.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.volume == nil {
		c.volume = map[string]string{}
	}
	key := strings.TrimPrefix(ev.KV.Key, ClaimPrefix)
	if ev.Type == storage.Deleted {
		delete(c.volume, key)
		return
	}
	if k, v, ok := claimVolume(ev.KV); ok {
		c.volume[k] = v
	} else {
		delete(c.volume, key)
	}
}

func (c *claims) volumeOf(namespace, name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.volume[namespace+"/"+name]
}

func claimVolume(kv *storage.KeyValue) (string, string, bool) {
	var pvc corev1.PersistentVolumeClaim
	if err := json.Unmarshal(kv.Value, &pvc); err != nil || pvc.Spec.VolumeName == "" {
		return "", "", false
	}
	return strings.TrimPrefix(kv.Key, ClaimPrefix), pvc.Spec.VolumeName, true
}

// VolumePrefix is where persistent volumes are stored.
const VolumePrefix = "/registry/persistentvolumes/"

// localPathProvisioner provisions the volumes a node keeps itself
// (controllers/localpath).
const localPathProvisioner = "skiff.io/local-path"

// volumes follows which local-path volumes are placed on which node (by
// their required kubernetes.io/hostname node affinity, which the
// provisioner sets to the node's hostname label, the node name for skiff
// agents), so that a node may read the volumes that live on it even when no
// pod uses them: its agent removes a volume's directory once the volume is
// gone, which to a node — refused a volume that does not exist, as
// Kubernetes refuses — shows as 403 for a directory whose volume it could
// read before.
type volumes struct {
	mu    sync.RWMutex
	nodes map[string][]string // volume name → nodes its affinity pins it to
}

// Reset implements follow.Handler.
func (v *volumes) Reset(kvs []*storage.KeyValue) {
	m := map[string][]string{}
	for _, kv := range kvs {
		if nodes := volumeNodes(kv); len(nodes) > 0 {
			m[strings.TrimPrefix(kv.Key, VolumePrefix)] = nodes
		}
	}
	v.mu.Lock()
	v.nodes = m
	v.mu.Unlock()
}

// Apply implements follow.Handler.
func (v *volumes) Apply(ev storage.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.nodes == nil {
		v.nodes = map[string][]string{}
	}
	name := strings.TrimPrefix(ev.KV.Key, VolumePrefix)
	if nodes := volumeNodes(ev.KV); ev.Type != storage.Deleted && len(nodes) > 0 {
		v.nodes[name] = nodes
	} else {
		delete(v.nodes, name)
	}
}

// on reports whether the local-path volume name is placed on node.
func (v *volumes) on(name, node string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, n := range v.nodes[name] {
		if n == node {
			return true
		}
	}
	return false
}

// volumeNodes lists the hostnames a local-path volume's required node
// affinity allows (none for other volumes).
func volumeNodes(kv *storage.KeyValue) []string {
	var pv corev1.PersistentVolume
	if err := json.Unmarshal(kv.Value, &pv); err != nil || pv.Spec.Local == nil ||
		pv.Annotations["pv.kubernetes.io/provisioned-by"] != localPathProvisioner ||
		pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if req.Key == corev1.LabelHostname && req.Operator == corev1.NodeSelectorOpIn {
				out = append(out, req.Values...)
			}
		}
	}
	return out
}
