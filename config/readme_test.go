package config

import (
	"os"
	"strings"
	"testing"
)

// The README's configuration reference is written by hand; this keeps it
// from missing a setting when one is added here.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range serverSettings("") {
		row := "| `--" + st.name + "` | `" + EnvVar(st.name) + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no configuration row starting %q", row)
		}
	}
}
