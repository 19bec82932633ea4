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

// volumes follows which persistent volumes exist (names only), so that a
// node may learn that a volume it holds a directory for is gone: a get of a
// volume that does not exist is allowed and answers 404.
type volumes struct {
	mu    sync.RWMutex
	names map[string]bool
}

// Reset implements follow.Handler.
func (v *volumes) Reset(kvs []*storage.KeyValue) {
	m := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		m[strings.TrimPrefix(kv.Key, VolumePrefix)] = true
	}
	v.mu.Lock()
	v.names = m
	v.mu.Unlock()
}

// Apply implements follow.Handler.
func (v *volumes) Apply(ev storage.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.names == nil {
		v.names = map[string]bool{}
	}
	name := strings.TrimPrefix(ev.KV.Key, VolumePrefix)
	if ev.Type == storage.Deleted {
		delete(v.names, name)
	} else {
		v.names[name] = true
	}
}

func (v *volumes) exists(name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.names[name]
}
