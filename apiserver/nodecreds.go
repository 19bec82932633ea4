package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/storage"
)

// getNode reads a Node from the store for nodejoin (a node's serving
// certificate names the addresses its Node reports).
func (s *Server) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	nodes, ok := s.reg.Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	if !ok {
		return nil, errors.New("nodes are not registered")
	}
	kv, err := s.cfg.Store.Get(ctx, nodes.Key("", name), 0)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierrors.NewNotFound(nodes.GroupResource(), name)
	}
	if err != nil {
		return nil, err
	}
	n := &corev1.Node{}
	if err := json.Unmarshal(kv.Value, n); err != nil {
		return nil, fmt.Errorf("decoding node %s: %w", name, err)
	}
	return n, nil
}
