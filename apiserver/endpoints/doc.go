// Package endpoints is the one generic handler behind every resource path:
// it parses /api and /apis URLs into a request (group, version, resource,
// namespace, name, subresource, verb), negotiates encodings, and maps the
// verb onto the store (get, list, watch, create, update, patch, delete,
// deletecollection) using the resource's registry entry. There are no
// per-resource handlers: resource differences live in registry strategies.
package endpoints
