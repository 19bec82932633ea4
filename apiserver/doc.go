// Package apiserver is skiff's Kubernetes-compatible API server: a gin
// HTTPS server that authenticates each request (client certificates from
// the cluster CA, bearer tokens), counts it in Prometheus metrics, and hands
// resource requests to the one generic handler (package endpoints) over the
// resource registry (package registry). Discovery and OpenAPI come from
// package discovery; custom resources are added at run time by package crd.
//
// Request path: recovery → metrics → authentication → (authorization in
// the handler) → registry strategy (defaulting, validation) → storage.
package apiserver
