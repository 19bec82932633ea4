package endpoints

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// metaListOptionsKind is the kind invalid list/watch options are reported as.
var metaListOptionsKind = schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}

func invalidField(path, value, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, detail)}
}

var metaDeleteOptionsKind = schema.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}
