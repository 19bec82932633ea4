package authn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	write := func(content string) string {
		p := filepath.Join(t.TempDir(), "tokens.csv")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := ReadTokenFile(write("# comment\nt1,alice,u1,\"dev,ops\"\nt2,bob,u2\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := got["t1"]; a.Name != "alice" || a.UID != "u1" || strings.Join(a.Groups, ",") != "dev,ops" {
		t.Errorf("t1 = %+v", a)
	}
	if b := got["t2"]; b.Name != "bob" || len(b.Groups) != 0 {
		t.Errorf("t2 = %+v", b)
	}
	for name, content := range map[string]string{
		"too few fields":  "t1,alice\n",
		"empty user":      "t1,,u1\n",
		"duplicate token": "t1,alice,u1\nt1,bob,u2\n",
		"bad quoting":     "t1,alice,u1,\"dev\n",
	} {
		if _, err := ReadTokenFile(write(content)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
