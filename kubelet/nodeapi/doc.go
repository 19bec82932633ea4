// Package nodeapi is the node agent's HTTP API that the API server proxies
// pod subresources to. It serves container logs as the kubelet does
// (GET /containerLogs/{namespace}/{pod}/{container} with the PodLogOptions
// query parameters follow, previous, tailLines, timestamps, sinceSeconds,
// sinceTime, limitBytes) so `kubectl logs` works through the API server, and
// exec (POST /exec/{namespace}/{pod}/{container}?command=…&input=1&output=1
// &error=1&tty=1, the kubelet's parameters) over the same SPDY remotecommand
// protocol as the kubelet, and attach (/attach/…, the same parameters
// without command): through the Attacher for containers with stdin, else
// following the log, output only.
// Authentication (the API server's client certificate) belongs to the TLS
// server that mounts this handler.
package nodeapi
