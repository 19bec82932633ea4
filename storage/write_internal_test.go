package storage

import (
	"fmt"
	"testing"
)

// pieces splits a multi-row statement into power-of-two row counts whose
// rows and arguments, in order, are the whole statement's.
func TestMultiRowStatementPieces(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 8, 13, 255, 256} {
		args := make([]any, 0, 2*n)
		for i := range n {
			args = append(args, i, fmt.Sprint(i))
		}
		st := rowsTemplate{"INSERT INTO t VALUES ", "(?,?)", " ON CONFLICT DO NOTHING"}.stmt(n, args)
		var rows, next int
		for _, p := range st.pieces() {
			k := len(p.args) / 2
			if k&(k-1) != 0 {
				t.Fatalf("%d rows: a piece of %d rows", n, k)
			}
			if want := "INSERT INTO t VALUES " + repeatRow("(?,?)", k) + " ON CONFLICT DO NOTHING"; p.sql != want {
				t.Fatalf("%d rows: piece %q, want %q", n, p.sql, want)
			}
			for i := 0; i < len(p.args); i += 2 {
				if p.args[i] != next {
					t.Fatalf("%d rows: row %d out of order (got %v)", n, next, p.args[i])
				}
				next++
			}
			rows += k
		}
		if rows != n {
			t.Fatalf("%d rows: pieces hold %d", n, rows)
		}
	}
}
