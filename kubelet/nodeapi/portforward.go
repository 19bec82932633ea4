package nodeapi

import (
	"context"
	"io"
	"net/http"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// PortForwarder copies one connection's bytes between stream and a port of
// a pod, as seen from inside the pod (its localhost), as the kubelet does
// (podruntime.Runtime implements it).
type PortForwarder interface {
	PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error
}

type portForwardAdapter struct{ p PortForwarder }

func (a portForwardAdapter) PortForward(ctx context.Context, name, _ string, port int32, stream io.ReadWriteCloser) error {
	ns, pod := splitPodName(name)
	return a.p.PortForward(ctx, ns, pod, port, stream)
}

// servePortForward answers /portForward/{namespace}/{pod}: SPDY streams
// (one data and one error stream per connection, the port in a header),
// or WebSocket channels with ?port=… for each port.
func servePortForward(w http.ResponseWriter, r *http.Request, p PortForwarder) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(w, r, portForwardAdapter{p}, ns+"/"+pod, "", opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}
