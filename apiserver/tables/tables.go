package tables

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Options are the parts of metav1.TableOptions the conversion honours.
type Options struct {
	// NoHeaders leaves ColumnDefinitions out (rows only), as for the
	// second and later events of a watch.
	NoHeaders bool
	// IncludeObject says what each row's Object holds: Metadata (the
	// default, also for ""), Object, or None.
	IncludeObject metav1.IncludeObjectPolicy
	// Now is the instant ages are measured from; zero means time.Now().
	// Set it for reproducible output.
	Now time.Time
}

// Convertor turns an object, or a list of objects, into a Table.
type Convertor interface {
	ConvertToTable(obj runtime.Object, opts Options) (*metav1.Table, error)
}

// ConvertToTable converts a typed k8s.io/api object or list (e.g. *corev1.Pod,
// *corev1.PodList), or an *unstructured.Unstructured / UnstructuredList, with
// the printer for its kind. Unstructured objects of kinds this package does
// not know get NAME and AGE; use ForCRD for a custom resource's own columns.
func ConvertToTable(obj runtime.Object, opts Options) (*metav1.Table, error) {
	return builtin.ConvertToTable(obj, opts)
}

// Default is the Convertor behind ConvertToTable, for registries that keep
// one Convertor per resource (ForCRD supplies custom resources' own).
func Default() Convertor { return builtin }

// ParseIncludeObject checks an includeObject query value; "" is Metadata.
func ParseIncludeObject(v string) (metav1.IncludeObjectPolicy, error) {
	switch p := metav1.IncludeObjectPolicy(v); p {
	case "":
		return metav1.IncludeMetadata, nil
	case metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
		return p, nil
	default:
		return "", fmt.Errorf("includeObject %q is not valid: use None, Metadata or Object", v)
	}
}

// rowFunc fills the cells (and conditions) of one object's row.
type rowFunc func(obj runtime.Object, now time.Time) (metav1.TableRow, error)

// printer is the table layout of one kind.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     rowFunc
}

// registry maps Go types of single objects (e.g. *corev1.Pod) to printers.
type registry struct {
	byType map[reflect.Type]*printer
}

// builtin holds every kind printed by this package.
var builtin = newBuiltinRegistry()

// add registers fn as the printer of T. A cell list longer or shorter than
// the columns is a programming error that tests catch per kind.
func add[T runtime.Object](r *registry, columns []metav1.TableColumnDefinition, fn func(obj T, now time.Time) metav1.TableRow) {
	var zero T
	r.byType[reflect.TypeOf(zero)] = &printer{
		columns: columns,
		row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
			typed, ok := obj.(T)
			if !ok {
				return metav1.TableRow{}, fmt.Errorf("tables: printer for %T got %T", zero, obj)
			}
			return fn(typed, now), nil
		},
	}
}

func (r *registry) ConvertToTable(obj runtime.Object, opts Options) (*metav1.Table, error) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, fmt.Errorf("tables: nil object")
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if typed, ok := r.typedFromUnstructured(o); ok {
			return r.ConvertToTable(typed, opts)
		}
		return defaultCustom.ConvertToTable(o, opts)
	case *unstructured.UnstructuredList:
		return r.convertUnstructuredList(o, opts)
	}
	if meta.IsListType(obj) {
		p := r.printerForList(obj)
		return p.convert(obj, opts)
	}
	p, ok := r.byType[reflect.TypeOf(obj)]
	if !ok {
		p = createdAtPrinter
	}
	return p.convert(obj, opts)
}

// printerForList finds the printer for the element type of a typed list's
// Items field, so an empty list still gets its kind's columns.
func (r *registry) printerForList(list runtime.Object) *printer {
	v := reflect.ValueOf(list)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if items := v.FieldByName("Items"); items.IsValid() && items.Kind() == reflect.Slice {
			elem := items.Type().Elem()
			if elem.Kind() != reflect.Pointer {
				elem = reflect.PointerTo(elem)
			}
			if p, ok := r.byType[elem]; ok {
				return p
			}
		}
	}
	return createdAtPrinter
}

// convertUnstructuredList prints a list of a built-in kind with that kind's
// printer (converting each item to its Go type) and anything else as custom
// resources with NAME and AGE.
func (r *registry) convertUnstructuredList(list *unstructured.UnstructuredList, opts Options) (*metav1.Table, error) {
	gvk := list.GroupVersionKind()
	if len(list.Items) > 0 {
		gvk = list.Items[0].GroupVersionKind()
	} else if kind, ok := trimListSuffix(gvk.Kind); ok {
		gvk.Kind = kind
	}
	proto, err := scheme.New(gvk)
	if err != nil {
		return defaultCustom.ConvertToTable(list, opts)
	}
	p, ok := r.byType[reflect.TypeOf(proto)]
	if !ok {
		return defaultCustom.ConvertToTable(list, opts)
	}
	typed := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		obj, ok := r.typedFromUnstructured(&list.Items[i])
		if !ok || reflect.TypeOf(obj) != reflect.TypeOf(proto) {
			// A malformed or foreign item: print the whole list with the
			// generic columns rather than fail the request.
			return defaultCustom.ConvertToTable(list, opts)
		}
		typed = append(typed, obj)
	}
	return p.convertItems(list, typed, opts)
}

func trimListSuffix(kind string) (string, bool) {
	const suffix = "List"
	if len(kind) > len(suffix) && kind[len(kind)-len(suffix):] == suffix {
		return kind[:len(kind)-len(suffix)], true
	}
	return kind, false
}

// typedFromUnstructured converts an unstructured object of a kind this
// package prints into its Go type.
func (r *registry) typedFromUnstructured(u *unstructured.Unstructured) (runtime.Object, bool) {
	obj, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, false
	}
	if _, ok := r.byType[reflect.TypeOf(obj)]; !ok {
		return nil, false
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, false
	}
	return obj, true
}

func (p *printer) convert(obj runtime.Object, opts Options) (*metav1.Table, error) {
	if !meta.IsListType(obj) {
		return p.convertItems(obj, []runtime.Object{obj}, opts)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	return p.convertItems(obj, items, opts)
}

// convertItems builds the table for items; source (the list or the single
// object) supplies resourceVersion and, for lists, continue and
// remainingItemCount, which kubectl needs to page and to watch from.
func (p *printer) convertItems(source runtime.Object, items []runtime.Object, opts Options) (*metav1.Table, error) {
	policy, err := ParseIncludeObject(string(opts.IncludeObject))
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	table := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: metav1.SchemeGroupVersion.String()},
		Rows:     make([]metav1.TableRow, 0, len(items)),
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = p.columns
	}
	copyListMeta(table, source)
	for i, item := range items {
		row, err := p.row(item, now)
		if err != nil {
			return nil, fmt.Errorf("tables: row %d: %w", i, err)
		}
		if len(row.Cells) != len(p.columns) {
			return nil, fmt.Errorf("tables: %T row has %d cells for %d columns", item, len(row.Cells), len(p.columns))
		}
		if row.Object, err = rowObject(item, policy); err != nil {
			return nil, fmt.Errorf("tables: row %d: %w", i, err)
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

func copyListMeta(table *metav1.Table, source runtime.Object) {
	if m, err := meta.ListAccessor(source); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
		return
	}
	if m, err := meta.Accessor(source); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
}

// rowObject encodes what the row carries as JSON with kind and apiVersion.
// It is encoded here rather than left as a Go object because RawExtension
// marshals an embedded typed object without its (usually empty) TypeMeta.
func rowObject(obj runtime.Object, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		raw, err := objectJSON(obj)
		return runtime.RawExtension{Raw: raw}, err
	}
	partial, err := partialMetadata(obj)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	raw, err := json.Marshal(partial)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encode metadata: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}

func partialMetadata(obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	partial := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: metav1.SchemeGroupVersion.String()},
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if m, ok := o.Object["metadata"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &partial.ObjectMeta); err != nil {
				return nil, fmt.Errorf("metadata of %s %q: %w", o.GetKind(), o.GetName(), err)
			}
		}
	case metav1.ObjectMetaAccessor:
		if om, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			partial.ObjectMeta = *om
		} else {
			return nil, fmt.Errorf("%T has no standard object metadata", obj)
		}
	default:
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return partial, nil
}

// objectJSON encodes obj with its kind and apiVersion, looked up in the
// scheme when the typed object's TypeMeta is empty (as it is after decoding
// into a Go type). The caller's object is not modified.
func objectJSON(obj runtime.Object) ([]byte, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.MarshalJSON()
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			return nil, fmt.Errorf("kind of %T is unknown: %v", obj, err)
		}
		gvk = kinds[0]
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", obj, err)
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	m["apiVersion"], m["kind"] = apiVersion, kind
	return json.Marshal(m)
}
