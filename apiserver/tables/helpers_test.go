package tables

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// assertColumns checks column names in order; a trailing "*" marks a column
// that must have Priority 1 (wide only), every other must have Priority 0.
func assertColumns(t *testing.T, table *metav1.Table, want ...string) {
	t.Helper()
	var got []string
	for _, c := range table.ColumnDefinitions {
		name := c.Name
		if c.Priority > 0 {
			name += "*"
		}
		got = append(got, name)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("columns = %q, want %q", got, want)
	}
}

// assertCells compares cells by their printed form and, for non-strings,
// their Go type too (kubectl sorts integer columns numerically).
func assertCells(t *testing.T, cells []any, want ...any) {
	t.Helper()
	if len(cells) != len(want) {
		t.Fatalf("cells = %#v (%d), want %d cells %#v", cells, len(cells), len(want), want)
	}
	for i := range want {
		if fmt.Sprintf("%T:%v", cells[i], cells[i]) != fmt.Sprintf("%T:%v", want[i], want[i]) {
			t.Errorf("cell %d = %#v, want %#v", i, cells[i], want[i])
		}
	}
}
