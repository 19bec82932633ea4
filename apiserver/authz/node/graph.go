package node

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/apiserver/authz/follow"
	"github.com/skiffkube/skiff/storage"
)

// PodPrefix is where pods are stored.
const PodPrefix = "/registry/pods/"

// refKind is a kind of object a pod references.
type refKind uint8

const (
	refSecret refKind = iota + 1
	refConfigMap
	refPVC
	refServiceAccount
)

type ref struct {
	kind            refKind
	namespace, name string
}

// pod is what the graph keeps of one pod.
type pod struct {
	node string
	refs []ref
}

// Graph knows, from a watch of the pods, which pods are bound to which node
// and which secrets, config maps, claims and service accounts those pods
// reference: the relationships the node authorizer allows along.
type Graph struct {
	log *slog.Logger

	mu    sync.RWMutex
	pods  map[string]*pod        // storage key → pod
	nodes map[string]map[ref]int // node → referenced object → number of pods referencing it

	claims  claims
	volumes volumes
}

// NewGraph returns an empty graph; Start fills it.
func NewGraph(log *slog.Logger) *Graph {
	if log == nil {
		log = slog.Default()
	}
	return &Graph{log: log, pods: map[string]*pod{}, nodes: map[string]map[ref]int{}}
}

// Start loads the pods, claims and volume names and follows them until ctx
// ends.
func (g *Graph) Start(ctx context.Context, store follow.Store) error {
	if err := follow.Start(ctx, store, ClaimPrefix, &g.claims, g.log); err != nil {
		return err
	}
	if err := follow.Start(ctx, store, VolumePrefix, &g.volumes, g.log); err != nil {
		return err
	}
	return follow.Start(ctx, store, PodPrefix, g, g.log)
}

// Reset implements follow.Handler.
func (g *Graph) Reset(kvs []*storage.KeyValue) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pods, g.nodes = map[string]*pod{}, map[string]map[ref]int{}
	for _, kv := range kvs {
		g.setLocked(kv.Key, kv.Value)
	}
}

// Apply implements follow.Handler.
func (g *Graph) Apply(ev storage.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev.Type == storage.Deleted {
		g.removeLocked(ev.KV.Key)
		return
	}
	if ev.Type == storage.Updated && g.pods[ev.KV.Key] != nil && !bytes.Contains(ev.KV.Value, ephemeralContainersField) {
		// A bound pod keeps its node (a binding only places an unbound
		// pod) and its spec's references: pod updates may not change them
		// (validation's validatePodUpdate), and the status subresource
		// writes no spec. Only ephemeral containers, added later, can
		// bring new ones. So an update of a pod the graph has bound, with
		// none, is nothing to the graph: most pod events (the kubelet's
		// status updates) skip decoding the pod. A pod recreated under
		// the same name comes as a delete and a create.
		return
	}
	g.setLocked(ev.KV.Key, ev.KV.Value)
}

// ephemeralContainersField and nodeNameField are how a stored pod's spec
// names its ephemeral containers (the status's field is
// ephemeralContainerStatuses) and its node. Finding neither in a pod's
// JSON is proof enough that it has none; finding one elsewhere (in an
// annotation, say) only costs a decode.
var (
	ephemeralContainersField = []byte(`"ephemeralContainers"`)
	nodeNameField            = []byte(`"nodeName"`)
)

// storedPod is the part of a stored pod the graph reads. Decoding only it
// skips the status and managedFields, most of a pod's bytes, for every pod
// event (under load, thousands a second of status updates).
type storedPod struct {
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		NodeName            string                        `json:"nodeName"`
		ServiceAccountName  string                        `json:"serviceAccountName"`
		ImagePullSecrets    []corev1.LocalObjectReference `json:"imagePullSecrets"`
		Volumes             []corev1.Volume               `json:"volumes"`
		InitContainers      []containerRefs               `json:"initContainers"`
		Containers          []containerRefs               `json:"containers"`
		EphemeralContainers []containerRefs               `json:"ephemeralContainers"`
	} `json:"spec"`
}

// containerRefs is what a container (of any kind) may reference.
type containerRefs struct {
	Env     []corev1.EnvVar        `json:"env"`
	EnvFrom []corev1.EnvFromSource `json:"envFrom"`
}

func (g *Graph) setLocked(key string, value []byte) {
	g.removeLocked(key)
	if !bytes.Contains(value, nodeNameField) {
		// Not bound (an empty nodeName is left out): nothing to track.
		// Every pod is created so before the scheduler binds it.
		return
	}
	p := &storedPod{}
	if err := json.Unmarshal(value, p); err != nil {
		g.log.Error("node graph: skipping undecodable pod", "key", key, "err", err)
		return
	}
	if p.Spec.NodeName == "" {
		return
	}
	e := &pod{node: p.Spec.NodeName, refs: references(p)}
	g.pods[key] = e
	m := g.nodes[e.node]
	if m == nil {
		m = map[ref]int{}
		g.nodes[e.node] = m
	}
	for _, r := range e.refs {
		m[r]++
	}
}

func (g *Graph) removeLocked(key string) {
	e := g.pods[key]
	if e == nil {
		return
	}
	delete(g.pods, key)
	m := g.nodes[e.node]
	for _, r := range e.refs {
		if m[r]--; m[r] <= 0 {
			delete(m, r)
		}
	}
	if len(m) == 0 {
		delete(g.nodes, e.node)
	}
}

// podNode returns the node a pod is bound to ("" if none or unknown).
func (g *Graph) podNode(namespace, name string) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if e := g.pods[PodPrefix+namespace+"/"+name]; e != nil {
		return e.node
	}
	return ""
}

// references reports whether a pod bound to node references the object.
func (g *Graph) references(node string, r ref) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[node][r] > 0
}

// usesVolume reports whether a pod bound to node uses a claim bound to the
// persistent volume pv.
func (g *Graph) usesVolume(node, pv string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for r := range g.nodes[node] {
		if r.kind == refPVC && g.claims.volumeOf(r.namespace, r.name) == pv {
			return true
		}
	}
	return false
}

// references lists the objects a pod needs to run: secrets and config maps
// from volumes (projected ones too), env and envFrom; image pull secrets;
// persistent volume claims; its service account.
func references(p *storedPod) []ref {
	ns := p.Metadata.Namespace
	seen := map[ref]bool{}
	var out []ref
	add := func(k refKind, name string) {
		r := ref{kind: k, namespace: ns, name: name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	add(refServiceAccount, sa)
	for _, s := range p.Spec.ImagePullSecrets {
		add(refSecret, s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add(refSecret, v.Secret.SecretName)
		case v.ConfigMap != nil:
			add(refConfigMap, v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add(refPVC, v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add(refSecret, src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add(refConfigMap, src.ConfigMap.Name)
				}
			}
		}
	}
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers, p.Spec.EphemeralContainers) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(refSecret, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add(refConfigMap, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add(refSecret, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add(refConfigMap, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return out
}
