package registry

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// TableConvertor turns one object, or a list of objects, into a Table with
// one row per object, each row's Object as include asks (None, Metadata,
// Object). A converter may instead leave the object in Row.Object.Object;
// the handler then applies include itself.
type TableConvertor func(obj runtime.Object, include metav1.IncludeObjectPolicy) (*metav1.Table, error)

// DefaultTable is the generic converter: NAME and AGE, as Kubernetes prints
// resources it has no columns for.
func DefaultTable(obj runtime.Object, _ metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	t := &metav1.Table{
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
			{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
		},
	}
	add := func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{m.GetName(), HumanAge(m.GetCreationTimestamp())},
			Object: runtime.RawExtension{Object: o},
		})
		return nil
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, fmt.Errorf("table: %w", err)
		}
		for _, it := range items {
			if err := add(it); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	return t, add(obj)
}

// HumanAge prints an age as kubectl does ("5m", "3d"), "<unknown>" for zero.
func HumanAge(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}
