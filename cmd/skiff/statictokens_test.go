package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/config"
)

// The cluster token is the admin's and the agent token the joining
// agents': a --token-auth-file that lists either would give it a second
// identity, so the server refuses to start, naming the settings.
func TestStaticTokens(t *testing.T) {
	dir := t.TempDir()
	file := func(lines string) string {
		p := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := &config.Server{Token: "admin-secret", AgentToken: "join-secret"}
	tokens, err := staticTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if u := tokens["admin-secret"]; u.Name != "admin" || strings.Join(u.Groups, ",") != authn.GroupMasters {
		t.Errorf("the cluster token is %+v", u)
	}
	if u := tokens["join-secret"]; u.Name != "system:bootstrap:skiff-agent" || strings.Join(u.Groups, ",") != "system:bootstrappers" {
		t.Errorf("the agent token is %+v", u)
	}

	cfg.TokenAuthFile = file("ci-secret,ci,1001,\"dev\"\n")
	if tokens, err = staticTokens(cfg); err != nil || tokens["ci-secret"].Name != "ci" || len(tokens) != 3 {
		t.Errorf("with a token file: %v %v", tokens, err)
	}
	for _, c := range []struct{ line, want string }{
		{"admin-secret,someone,1\n", "invalid --token-auth-file: it lists the cluster token (--token)"},
		{"join-secret,someone,1\n", "invalid --token-auth-file: it lists the agent join token (--agent-token)"},
	} {
		cfg.TokenAuthFile = file(c.line)
		if _, err := staticTokens(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token file %q: %v, want %q", c.line, err, c.want)
		}
	}
}
