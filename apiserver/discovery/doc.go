// Package discovery serves the documents clients read to learn what the
// server offers: aggregated discovery (apidiscovery.k8s.io v2 and v2beta1 on
// /api and /apis, when the Accept header asks for it), legacy discovery
// (/api, /apis, /apis/<group>, and an APIResourceList per group/version),
// and OpenAPI v3 (/openapi/v3) with the paths that tell kubectl which kinds
// accept server-side field validation, so apply, create -f, edit and
// replace work with their default validation, and the component schemas
// kubectl explain reads. Everything is computed from the registry, so
// custom resources appear as soon as their CRD is registered.
package discovery
