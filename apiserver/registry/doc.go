// Package registry declares every resource the API server serves, once:
// group, version, plural, kind, scope, short names, categories, the
// strategy that prepares objects for create and update (status/spec split,
// generation bump), the fields a field selector may name, and the
// subresources. The generic handler in package endpoints serves every entry
// the same way; a new resource is a new entry here, not a new handler.
//
// The Registry is safe for concurrent use and changes at run time: the CRD
// controller adds and removes custom resources without a restart.
package registry
