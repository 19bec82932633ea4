// Package nodeapi is the node agent's HTTP API that the API server proxies
// pod subresources to. It serves container logs as the kubelet does
// (GET /containerLogs/{namespace}/{pod}/{container} with the PodLogOptions
// query parameters follow, previous, tailLines, timestamps, sinceSeconds,
// sinceTime, limitBytes) so `kubectl logs` works through the API server.
// Authentication (the API server's client certificate) belongs to the TLS
// server that mounts this handler.
package nodeapi
