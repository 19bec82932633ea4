package tables

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func labelledConfigMap(name string) corev1.ConfigMap {
	return corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID("uid-" + name), ResourceVersion: "42",
			Labels: map[string]string{"app": "web"}, CreationTimestamp: ago(time.Minute)},
		Data: map[string]string{"k": "v"},
	}
}

func TestListConversionKeepsListMetaAndOrder(t *testing.T) {
	list := &corev1.ConfigMapList{
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "tok", RemainingItemCount: ptr.To[int64](5)},
		Items:    []corev1.ConfigMap{labelledConfigMap("a"), labelledConfigMap("b"), labelledConfigMap("c")},
	}
	table, err := ConvertToTable(list, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Errorf("TypeMeta = %v", table.TypeMeta)
	}
	if table.ResourceVersion != "99" || table.Continue != "tok" || table.RemainingItemCount == nil || *table.RemainingItemCount != 5 {
		t.Errorf("ListMeta = %+v, want the list's", table.ListMeta)
	}
	assertColumns(t, table, "Name", "Data", "Age")
	var names []string
	for _, r := range table.Rows {
		names = append(names, r.Cells[0].(string))
	}
	if strings.Join(names, ",") != "a,b,c" {
		t.Errorf("rows = %v, want a,b,c in order", names)
	}
}

func TestEmptyTypedListStillHasItsColumns(t *testing.T) {
	for _, list := range []runtime.Object{&corev1.PodList{}, &appsv1.DeploymentList{}} {
		table, err := ConvertToTable(list, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 0 || len(table.ColumnDefinitions) < 5 {
			t.Errorf("%T: %d rows, %d columns; want no rows and the kind's columns", list, len(table.Rows), len(table.ColumnDefinitions))
		}
		if table.Rows == nil {
			t.Errorf("%T: rows is nil; want an empty list so JSON has rows: []", list)
		}
	}
}

func TestNoHeaders(t *testing.T) {
	cm := labelledConfigMap("a")
	table, err := ConvertToTable(&cm, Options{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if table.ColumnDefinitions != nil || len(table.Rows) != 1 {
		t.Errorf("NoHeaders: columns %v rows %d", table.ColumnDefinitions, len(table.Rows))
	}
	if table.ResourceVersion != "42" {
		t.Errorf("single object table resourceVersion = %q, want the object's", table.ResourceVersion)
	}
}

func TestIncludeObjectPolicies(t *testing.T) {
	cm := labelledConfigMap("a")
	cases := []struct {
		policy metav1.IncludeObjectPolicy
		check  func(t *testing.T, raw []byte)
	}{
		{"", checkPartialMetadata},
		{metav1.IncludeMetadata, checkPartialMetadata},
		{metav1.IncludeObject, func(t *testing.T, raw []byte) {
			var got corev1.ConfigMap
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Kind != "ConfigMap" || got.APIVersion != "v1" || got.Data["k"] != "v" || got.Name != "a" {
				t.Errorf("object = %s, want the whole ConfigMap with kind and apiVersion", raw)
			}
		}},
		{metav1.IncludeNone, func(t *testing.T, raw []byte) {
			if raw != nil {
				t.Errorf("object = %s, want none", raw)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			table, err := ConvertToTable(&cm, Options{IncludeObject: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, table.Rows[0].Object.Raw)
		})
	}
	if cm.Kind != "" {
		t.Error("conversion set TypeMeta on the caller's object")
	}
	if _, err := ConvertToTable(&cm, Options{IncludeObject: "Everything"}); err == nil || !strings.Contains(err.Error(), "Everything") {
		t.Errorf("bad includeObject: err = %v", err)
	}
}

func checkPartialMetadata(t *testing.T, raw []byte) {
	t.Helper()
	var got metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "PartialObjectMetadata" || got.APIVersion != "meta.k8s.io/v1" {
		t.Errorf("TypeMeta = %v", got.TypeMeta)
	}
	if got.Name != "a" || got.Namespace != "team-a" || got.Labels["app"] != "web" || got.UID != "uid-a" {
		t.Errorf("metadata = %+v, want name, namespace, labels and uid", got.ObjectMeta)
	}
	if strings.Contains(string(raw), `"data"`) {
		t.Errorf("metadata-only row object carries data: %s", raw)
	}
}

func TestTableJSONHasEmbeddedObjects(t *testing.T) {
	cm := labelledConfigMap("a")
	table, err := ConvertToTable(&cm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"Table"`, `"apiVersion":"meta.k8s.io/v1"`, `"object":{"kind":"PartialObjectMetadata"`, `"cells":["a",1,"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("table JSON lacks %s: %s", want, out)
		}
	}
}

func TestUnstructuredBuiltinPrintsLikeTyped(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "default", "creationTimestamp": now.Add(-time.Hour).Format(time.RFC3339)},
		"spec":     map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
		"status":   map[string]any{"readyReplicas": int64(1), "updatedReplicas": int64(2), "availableReplicas": int64(1)},
	}}
	table, err := ConvertToTable(u, Options{Now: now, IncludeObject: metav1.IncludeObject})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*")
	assertCells(t, table.Rows[0].Cells, "web", "1/2", int64(2), int64(1), "60m", "", "", "app=web")
	if !strings.Contains(string(table.Rows[0].Object.Raw), `"kind":"Deployment"`) {
		t.Errorf("row object = %s", table.Rows[0].Object.Raw)
	}

	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": map[string]any{"resourceVersion": "7"}}}
	empty, err := ConvertToTable(list, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, empty, "Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*")
	list.Items = append(list.Items, *u, *u)
	full, err := ConvertToTable(list, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Rows) != 2 || full.ResourceVersion != "7" {
		t.Errorf("unstructured list: %d rows, rv %q", len(full.Rows), full.ResourceVersion)
	}
}

func widget(name string, spec map[string]any, status map[string]any) unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default", "creationTimestamp": now.Add(-3 * time.Hour).Format(time.RFC3339), "labels": map[string]any{"tier": "gold"}},
		"spec":     spec,
	}
	if status != nil {
		obj["status"] = status
	}
	return unstructured.Unstructured{Object: obj}
}

func TestUnknownKindsGetDefaultColumns(t *testing.T) {
	w := widget("w1", map[string]any{"size": int64(3)}, nil)
	table, err := ConvertToTable(&w, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Age")
	assertCells(t, table.Rows[0].Cells, "w1", "3h")
	checkPartialMetadata2(t, table.Rows[0].Object.Raw, "w1", "gold")

	typed := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", CreationTimestamp: metav1.NewTime(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))}}
	table, err = ConvertToTable(typed, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Created At")
	assertCells(t, table.Rows[0].Cells, "tmpl", "2026-02-03T04:05:06Z")
}

func checkPartialMetadata2(t *testing.T, raw []byte, name, tier string) {
	t.Helper()
	var got metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "PartialObjectMetadata" || got.Name != name || got.Labels["tier"] != tier {
		t.Errorf("row object = %s", raw)
	}
}

func TestCRDColumns(t *testing.T) {
	columns := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color", Description: "the color"},
		{Name: "Ratio", Type: "number", JSONPath: ".spec.ratio", Priority: 1},
		{Name: "Ready", Type: "boolean", JSONPath: ".status.ready"},
		{Name: "Ports", Type: "string", JSONPath: ".spec.ports"},
		{Name: "Seen", Type: "date", JSONPath: ".status.lastSeen"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	conv, err := ForCRD(columns)
	if err != nil {
		t.Fatal(err)
	}
	full := widget("w1",
		map[string]any{"size": int64(3), "color": "blue", "ratio": 0.5, "ports": []any{int64(80), int64(443)}},
		map[string]any{"ready": true, "lastSeen": now.Add(-90 * time.Second).Format(time.RFC3339)})
	bare := widget("w2", map[string]any{"size": "not a number"}, map[string]any{"lastSeen": "yesterday"})
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": map[string]any{"resourceVersion": "12", "continue": "c"}},
		Items: []unstructured.Unstructured{full, bare}}

	table, err := conv.ConvertToTable(list, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Size", "Color", "Ratio*", "Ready", "Ports", "Seen", "Age")
	if d := table.ColumnDefinitions[2].Description; d != "the color" {
		t.Errorf("description = %q", d)
	}
	if d := table.ColumnDefinitions[1].Description; !strings.Contains(d, ".spec.size") {
		t.Errorf("default description = %q, want the JSONPath in it", d)
	}
	if table.ResourceVersion != "12" || table.Continue != "c" {
		t.Errorf("list meta = %+v", table.ListMeta)
	}
	assertCells(t, table.Rows[0].Cells, "w1", int64(3), "blue", 0.5, true, "[80,443]", "90s", "3h")
	// Missing fields and wrongly typed values give empty cells; a date that
	// does not parse says so.
	assertCells(t, table.Rows[1].Cells, "w2", nil, nil, nil, nil, nil, "<invalid>", "3h")
	checkPartialMetadata2(t, table.Rows[0].Object.Raw, "w1", "gold")

	single, err := conv.ConvertToTable(&full, Options{Now: now, IncludeObject: metav1.IncludeNone})
	if err != nil {
		t.Fatal(err)
	}
	if len(single.Rows) != 1 || single.Rows[0].Object.Raw != nil {
		t.Errorf("single custom object: %+v", single.Rows)
	}
}

func TestCRDWithoutColumnsShowsAge(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1"},
			{Name: "v2", AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}},
		}},
	}
	v1, err := ForCRDVersion(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	w := widget("w1", map[string]any{"size": int64(3)}, nil)
	table, err := v1.ConvertToTable(&w, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Age")
	assertCells(t, table.Rows[0].Cells, "w1", "3h")

	v2, err := ForCRDVersion(crd, "v2")
	if err != nil {
		t.Fatal(err)
	}
	table, err = v2.ConvertToTable(&w, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Size")
	assertCells(t, table.Rows[0].Cells, "w1", int64(3))

	if _, err := ForCRDVersion(crd, "v9"); err == nil {
		t.Error("unknown version accepted")
	}
}

func TestBadInput(t *testing.T) {
	if _, err := ForCRD([]apiextensionsv1.CustomResourceColumnDefinition{{Name: "Bad", Type: "string", JSONPath: ".spec[unclosed"}}); err == nil || !strings.Contains(err.Error(), "Bad") {
		t.Errorf("bad JSONPath: err = %v, want one naming the column", err)
	}
	if _, err := NewColumnConvertor([]Column{{Name: "", Type: "string", JSONPath: ".a"}}); err == nil {
		t.Error("nameless column accepted")
	}
	if _, err := NewColumnConvertor([]Column{{Name: "X", Type: "string"}}); err == nil {
		t.Error("column without JSONPath accepted")
	}
	if _, err := ConvertToTable(nil, Options{}); err == nil {
		t.Error("nil object accepted")
	}
	var nilPod *corev1.Pod
	if _, err := ConvertToTable(nilPod, Options{}); err == nil {
		t.Error("nil *Pod accepted")
	}
	// An unstructured object claiming a built-in kind but with fields of the
	// wrong shape falls back to the generic columns instead of failing.
	broken := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": "not an object",
	}}
	table, err := ConvertToTable(broken, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Age")

	good := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "ok"}}}
	mixed := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "PodList"}, Items: []unstructured.Unstructured{*good, *broken}}
	table, err = ConvertToTable(mixed, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Age")
	if len(table.Rows) != 2 {
		t.Errorf("%d rows, want both items", len(table.Rows))
	}
}

func TestParseIncludeObject(t *testing.T) {
	for in, want := range map[string]metav1.IncludeObjectPolicy{"": metav1.IncludeMetadata, "None": metav1.IncludeNone, "Metadata": metav1.IncludeMetadata, "Object": metav1.IncludeObject} {
		got, err := ParseIncludeObject(in)
		if err != nil || got != want {
			t.Errorf("ParseIncludeObject(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseIncludeObject("object"); err == nil {
		t.Error("lower-case policy accepted; Kubernetes is case-sensitive here")
	}
}

// TestConcurrentConversion shares one CRD convertor and the built-in one
// between goroutines, as the API server does; run with -race.
func TestConcurrentConversion(t *testing.T) {
	conv, err := ForCRD([]apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				w := widget("w", map[string]any{"size": int64(i), "color": "red"}, nil)
				table, err := conv.ConvertToTable(&w, Options{Now: now})
				if err != nil {
					done <- err
					return
				}
				if table.Rows[0].Cells[1] != int64(i) || table.Rows[0].Cells[2] != "red" {
					done <- fmt.Errorf("cells = %v, want size %d", table.Rows[0].Cells, i)
					return
				}
				cm := labelledConfigMap("a")
				if _, err := ConvertToTable(&cm, Options{}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
