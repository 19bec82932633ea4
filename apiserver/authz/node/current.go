package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skiffkube/skiff/storage"
)

// PodStore is the part of the store StorePods reads.
type PodStore interface {
	Get(ctx context.Context, key string, revision int64) (*storage.KeyValue, error)
}

// StorePods reads a pod's node from the store: the list cache when it
// relates the pod to the node asked about, else the database, so that only
// an answer that allows is taken from the cache.
type StorePods struct {
	Store PodStore
}

// PodNode implements PodNodeReader; want is the node the caller asks for.
func (s StorePods) PodNode(ctx context.Context, namespace, name, want string) (string, error) {
	key := PodPrefix + namespace + "/" + name
	if cg, ok := s.Store.(storage.CachedGetter); ok {
		if kv, found, ok := cg.GetCached(key); ok && found {
			if node, err := podNodeOf(key, kv.Value); err == nil && node == want {
				return node, nil
			}
		}
	}
	kv, err := s.Store.Get(ctx, key, 0)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return podNodeOf(key, kv.Value)
}

func podNodeOf(key string, value []byte) (string, error) {
	var p struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(value, &p); err != nil {
		return "", fmt.Errorf("node authorizer: decoding %s: %w", key, err)
	}
	return p.Spec.NodeName, nil
}
