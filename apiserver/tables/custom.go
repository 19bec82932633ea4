package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// Column is one printer column of a custom resource, as in a CRD's
// additionalPrinterColumns. Type is one of integer, number, string, boolean
// or date (a timestamp shown as an age); Priority 1 marks a wide column.
type Column struct {
	Name        string
	Type        string
	Format      string
	Description string
	JSONPath    string
	Priority    int32
}

// ageCustomColumn is what apiextensions serves for a CRD that declares no
// printer columns.
var ageCustomColumn = Column{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: objectMetaDoc["creationTimestamp"]}

// defaultCustom prints objects of unknown kinds: NAME and AGE.
var defaultCustom = mustColumns(nil)

func mustColumns(cols []Column) Convertor {
	c, err := NewColumnConvertor(cols)
	if err != nil {
		panic(err) // only reached with the fixed default columns above
	}
	return c
}

// ForCRD builds the convertor for one version of a custom resource from
// that version's additionalPrinterColumns (nil or empty gives NAME and AGE).
func ForCRD(columns []apiextensionsv1.CustomResourceColumnDefinition) (Convertor, error) {
	cols := make([]Column, len(columns))
	for i, c := range columns {
		cols[i] = Column{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, JSONPath: c.JSONPath, Priority: c.Priority}
	}
	return NewColumnConvertor(cols)
}

// ForCRDVersion finds the served version's columns in crd and builds its
// convertor.
func ForCRDVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (Convertor, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return ForCRD(v.AdditionalPrinterColumns)
		}
	}
	return nil, fmt.Errorf("tables: CustomResourceDefinition %q has no version %q", crd.Name, version)
}

// NewColumnConvertor prints NAME followed by columns, each cell the first
// result of the column's JSONPath on the object (nil when absent). An
// invalid JSONPath is an error that names the column.
func NewColumnConvertor(columns []Column) (Convertor, error) {
	if len(columns) == 0 {
		columns = []Column{ageCustomColumn}
	}
	defs := []metav1.TableColumnDefinition{nameColumn()}
	for i, c := range columns {
		if strings.TrimSpace(c.Name) == "" {
			return nil, fmt.Errorf("tables: printer column %d has no name", i)
		}
		if strings.TrimSpace(c.JSONPath) == "" {
			return nil, fmt.Errorf("tables: printer column %q has no JSONPath", c.Name)
		}
		desc := c.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + c.JSONPath
		}
		defs = append(defs, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: desc, Priority: c.Priority})
	}
	// Parse once now so a bad path is reported when the CRD is loaded, not
	// on the first request.
	first, err := parseColumnPaths(columns)
	if err != nil {
		return nil, err
	}
	// A parsed JSONPath keeps state while it evaluates, so concurrent
	// requests each take their own parsed set from the pool.
	pool := &sync.Pool{New: func() any {
		paths, _ := parseColumnPaths(columns) // parsed successfully above
		return paths
	}}
	pool.Put(first)
	p := &printer{columns: defs}
	p.row = func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		paths := pool.Get().([]*jsonpath.JSONPath)
		defer pool.Put(paths)
		return columnRow(obj, columns, paths, now)
	}
	return printerConvertor{p}, nil
}

func parseColumnPaths(columns []Column) ([]*jsonpath.JSONPath, error) {
	paths := make([]*jsonpath.JSONPath, len(columns))
	for i, c := range columns {
		jp := jsonpath.New(c.Name)
		jp.AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
			return nil, fmt.Errorf("tables: printer column %q: JSONPath %q: %w", c.Name, c.JSONPath, err)
		}
		paths[i] = jp
	}
	return paths, nil
}

// printerConvertor exposes a printer as a Convertor.
type printerConvertor struct{ p *printer }

func (c printerConvertor) ConvertToTable(obj runtime.Object, opts Options) (*metav1.Table, error) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, errors.New("tables: nil object")
	}
	return c.p.convert(obj, opts)
}

func columnRow(obj runtime.Object, columns []Column, paths []*jsonpath.JSONPath, now time.Time) (metav1.TableRow, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, fmt.Errorf("%T has no object metadata: %w", obj, err)
	}
	var content map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		content = u.UnstructuredContent()
	} else if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
		return metav1.TableRow{}, fmt.Errorf("read %T: %w", obj, err)
	}
	cells := make([]any, 0, 1+len(columns))
	cells = append(cells, m.GetName())
	var buf bytes.Buffer
	for i, c := range columns {
		results, err := paths[i].FindResults(content)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		value := results[0][0].Interface()
		if c.Type == "string" {
			// Print as jsonpath does, so lists and maps read as JSON.
			buf.Reset()
			if err := paths[i].PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
				cells = append(cells, nil)
				continue
			}
			cells = append(cells, buf.String())
			continue
		}
		cells = append(cells, typedCell(c.Type, value, now))
	}
	return metav1.TableRow{Cells: cells}, nil
}

// typedCell converts a JSON value to the column's declared type; a value of
// another type gives an empty cell, as in Kubernetes.
func typedCell(typ string, value any, now time.Time) any {
	switch typ {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case int:
			return int64(v)
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case int:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return age(t, now)
		}
	}
	return nil
}
