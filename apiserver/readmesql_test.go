package apiserver_test

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// TestREADMEHistoryQueries runs the SQL the README's Storage section shows an
// operator ("who changed which deployment, and when", "what a deployment
// holds now") against the database of a server in which deployment
// default/web was created and scaled through the API, on each dialect: every
// statement meant for it (a block whose first line is "-- SQLite" or
// "-- PostgreSQL" is for that dialect alone) must find the deployment and
// show it readably, with the keys the server really writes.
func TestREADMEHistoryQueries(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for rest := string(readme); ; {
		_, after, ok := strings.Cut(rest, "```sql\n")
		if !ok {
			break
		}
		block, after, _ := strings.Cut(after, "```")
		blocks = append(blocks, block)
		rest = after
	}
	for _, dialect := range []struct {
		name, driver string
		endpoint     func(testing.TB) string
	}{
		{"SQLite", "sqlite", storagetest.SQLiteEndpoint},
		{"PostgreSQL", "pgx", storagetest.PostgresEndpoint},
	} {
		t.Run(dialect.name, func(t *testing.T) {
			var statements []string
			for _, b := range blocks {
				if first, _, _ := strings.Cut(b, "\n"); strings.HasPrefix(first, "-- ") && !strings.HasPrefix(first, "-- "+dialect.name) {
					continue
				}
				for _, s := range strings.Split(b, ";") {
					if s = strings.TrimSpace(s); s != "" {
						statements = append(statements, s)
					}
				}
			}
			if len(statements) < 2 {
				t.Fatalf("README.md shows %d statements for %s, want the history and the current-value queries", len(statements), dialect.name)
			}
			endpoint := dialect.endpoint(t)
			srv := apiservertest.Start(t, func(c *storage.Config) { c.Endpoint = endpoint })
			c := newClient(t, srv)
			dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`
			if resp, data := c.do("POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", []byte(dep)); resp.StatusCode != 201 {
				t.Fatalf("create: %d %s", resp.StatusCode, data)
			}
			if resp, data := c.do("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", "application/merge-patch+json", []byte(`{"spec":{"replicas":3}}`)); resp.StatusCode != 200 {
				t.Fatalf("scale: %d %s", resp.StatusCode, data)
			}
			db, err := sql.Open(dialect.driver, strings.TrimPrefix(endpoint, "sqlite://"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range statements {
				if got := queryText(t, db, dialect.driver, q); !strings.Contains(got, "web") {
					t.Errorf("README query shows nothing readable about deployment default/web:\n%s\ngot:\n%s", q, got)
				}
			}
		})
	}
}

// queryText runs q and returns its rows as a user reading them in the
// database's shell sees them, one line each. On PostgreSQL each row is cast
// to text, as psql shows it (bytea in hex); on SQLite blobs are shown as the
// sqlite3 shell shows them, as their bytes.
func queryText(t *testing.T, db *sql.DB, driver, q string) string {
	t.Helper()
	if driver == "pgx" {
		q = "SELECT row_::text FROM (" + q + ") row_"
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s\n: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			line = append(line, fmt.Sprint(v))
		}
		lines = append(lines, strings.Join(line, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
