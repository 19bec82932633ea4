// Package metrics counts API requests for Prometheus: requests by verb,
// resource and code, and latency histograms by verb and resource (watches,
// which last as long as the client wants, are counted but not timed).
package metrics
