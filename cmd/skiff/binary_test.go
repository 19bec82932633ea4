package main

import (
	"debug/elf"
	"strings"
	"testing"
)

// TestLinkerDropsUnusedMethods checks that the linker could leave out the
// exported methods nothing calls. It cannot once any code that may call
// a method by a name known only at run time (reflect's MethodByName, or
// text/template and html/template executing a template) is reachable:
// then it keeps every exported method of every type that may end up in an
// interface, and the binary grows by 40 MB (138 MB against 96, ~14 MB more
// resident in every skiff process). gin's (*Context).Bind is such a method:
// skiff never calls it.
func TestLinkerDropsUnusedMethods(t *testing.T) {
	canaries := map[string]bool{
		"github.com/gin-gonic/gin.(*Context).Bind":     true,
		"github.com/gin-gonic/gin.(*Context).BindYAML": true,
	}
	for _, s := range binarySymbols(t) {
		if canaries[s.Name] {
			t.Errorf("the binary holds %s, which nothing calls: the linker kept every exported method.\n"+
				"Find what reaches a method called by name with\n"+
				"  go build -tags grpcnotrace,nomsgpack -ldflags=-dumpdep -o /dev/null ./cmd/skiff 2>&1 | grep '<ReflectMethod>'\n"+
				"and follow the '->' edges back from it (was the binary built without -tags grpcnotrace?)", s.Name)
		}
	}
}

// TestBinaryLeavesOutMessagePack checks that the binary was built with
// -tags nomsgpack: gin's MessagePack codec (github.com/ugorji/go/codec),
// which skiff never uses, otherwise comes with gin's binding package and
// its initialisation keeps 3 MB of code in the binary, ~7 MB resident in
// every skiff process.
func TestBinaryLeavesOutMessagePack(t *testing.T) {
	for _, s := range binarySymbols(t) {
		if strings.HasPrefix(s.Name, "github.com/ugorji/go/codec.") {
			t.Fatalf("the binary holds %s: build it with -tags grpcnotrace,nomsgpack, as the README says", s.Name)
		}
	}
}

// binarySymbols is the symbol table of the skiff binary the tests built.
func binarySymbols(t *testing.T) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(skiffBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}
