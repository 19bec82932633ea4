package endpoints

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodeProxy serves the pod subresources that live on the pod's node
// (nodeproxy.Proxy).
type NodeProxy interface {
	Serve(w http.ResponseWriter, r *http.Request, subresource string, pod *corev1.Pod, node *corev1.Node) error
}

// nodeSubresources are pods/<sub> served by the node, with the verbs
// clients use: GET for logs, and for the streams POST (SPDY) or GET
// (WebSocket).
var nodeSubresources = map[string]map[string]bool{
	"log":         {"get": true},
	"exec":        {"get": true, "create": true},
	"attach":      {"get": true, "create": true},
	"portforward": {"get": true, "create": true},
}

// serveNodeSubresource finds the pod and its node and hands the request
// to the node proxy.
func (h *Handler) serveNodeSubresource(req *request) error {
	gr := schema.GroupResource{Group: req.res.Group, Resource: req.res.Name + "/" + req.info.Subresource}
	if req.res.Group != "" || req.res.Name != "pods" || req.info.Name == "" {
		return errors.NewNotFound(req.res.GroupResource(), req.info.Name)
	}
	if !nodeSubresources[req.info.Subresource][req.info.Verb] {
		return errors.NewMethodNotSupported(gr, req.info.Verb)
	}
	if h.nodes == nil {
		return errors.NewServiceUnavailable(fmt.Sprintf("%s is not available: this API server has no node client credentials", gr))
	}
	obj, _, err := h.load(req, req.info.Namespace, req.info.Name)
	if err != nil {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return errors.NewInternalError(fmt.Errorf("stored pod decodes as %T", obj))
	}
	if pod.Spec.NodeName == "" {
		return errors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	nodes, ok := h.reg.Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	if !ok {
		return errors.NewInternalError(fmt.Errorf("nodes are not registered"))
	}
	kv, err := h.store.Get(req.ctx, nodes.Key("", pod.Spec.NodeName), 0)
	if err != nil {
		return storeError(err, nodes.GroupResource(), pod.Spec.NodeName)
	}
	nobj, err := decodeKV(nodes, kv)
	if err != nil {
		return errors.NewInternalError(err)
	}
	node, ok := nobj.(*corev1.Node)
	if !ok {
		return errors.NewInternalError(fmt.Errorf("stored node decodes as %T", nobj))
	}
	return h.nodes.Serve(req.w, req.r, req.info.Subresource, pod, node)
}
