// Package tables turns API objects into meta.k8s.io/v1 Tables, the form
// `kubectl get` asks for (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
//
// Each built-in kind has the columns kubectl users know from Kubernetes'
// own server-side printers: same names, types, order and cell formats, with
// the -o wide columns marked Priority 1 (the server always sends every
// column; kubectl hides priority > 0 unless asked for wide output). Ages are
// duration.HumanDuration of the time since creation, as Kubernetes prints
// them. Kinds Kubernetes prints with its generic convertor (Role,
// ClusterRole, LimitRange, CustomResourceDefinition) get the same NAME and
// CREATED AT columns here.
//
// Custom resources use the CRD's additionalPrinterColumns (ForCRD), evaluated
// with client-go's jsonpath; a CRD without columns, or any unstructured object
// this package does not know, gets NAME and AGE, as apiextensions serves them.
// A typed object without a printer gets NAME and CREATED AT, Kubernetes'
// generic default. An unstructured object of a built-in kind is converted to
// its Go type first, so it prints like the typed object.
//
// Every row carries the object according to Options.IncludeObject: the
// object's metadata as a PartialObjectMetadata (the default, and what kubectl
// needs for -A, --show-labels and -L), the whole object, or nothing. Row
// objects are JSON with kind and apiVersion set.
package tables
