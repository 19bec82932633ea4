// Package discovery serves the documents clients read to learn what the
// server offers: legacy discovery (/api, /apis, /apis/<group>, and an
// APIResourceList per group/version) and a minimal OpenAPI v3 (/openapi/v3)
// that tells kubectl which kinds accept server-side field validation, so
// apply, create -f, edit and replace work with their default validation.
// Everything is computed from the registry, so custom resources appear as
// soon as their CRD is registered.
package discovery
