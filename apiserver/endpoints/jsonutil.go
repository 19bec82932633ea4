package endpoints

import (
	stdjson "encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// jsonUnmarshal decodes case-sensitively, keeping integers as int64, as the
// Kubernetes decoders do.
func jsonUnmarshal(data []byte, into any) error {
	if _, ok := into.(runtime.Unstructured); ok {
		return into.(interface{ UnmarshalJSON([]byte) error }).UnmarshalJSON(data)
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(data, into)
}

func encodeJSONValue(v any) ([]byte, error) { return stdjson.Marshal(v) }
