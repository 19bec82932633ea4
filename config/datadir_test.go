package config

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func prepared(t *testing.T, args ...string) (*Server, error) {
	t.Helper()
	s, err := loadWith(t, args, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Prepare(slog.New(slog.DiscardHandler))
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFirstStartCreatesTokenAndKeyAndLaterStartsReuseThem(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s1, err := prepared(t, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1.Token) != 64 {
		t.Errorf("generated token %q is not 64 hex characters", s1.Token)
	}
	if len(s1.AgentToken) != 64 || s1.AgentToken == s1.Token {
		t.Errorf("generated agent token %q is not 64 hex characters of its own (token %q)", s1.AgentToken, s1.Token)
	}
	for path, want := range map[string]os.FileMode{
		dir:                        0o700,
		filepath.Join(dir, "db"):   0o700,
		filepath.Join(dir, "cred"): 0o700,
		s1.TokenFile():             0o600,
		s1.AgentTokenFile():        0o600,
		s1.EncryptionKeyFile:       0o600,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s has mode %v, want %v", path, got, want)
		}
	}
	key, _ := os.ReadFile(s1.EncryptionKeyFile)
	if len(key) != EncryptionKeySize {
		t.Fatalf("key file holds %d bytes", len(key))
	}

	s2, err := prepared(t, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Token != s1.Token || s2.AgentToken != s1.AgentToken {
		t.Errorf("second start tokens %q %q, first %q %q", s2.Token, s2.AgentToken, s1.Token, s1.AgentToken)
	}
	if !bytes.Equal(s2.StorageConfig(nil).EncryptionKey, key) {
		t.Error("second start loaded a different encryption key")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*tmp*"))
	if top, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(leftovers)+len(top) > 0 {
		t.Errorf("temporary files left: %v %v", leftovers, top)
	}
}

func TestGivenTokenIsUsedAndNotWritten(t *testing.T) {
	dir := t.TempDir()
	s, err := prepared(t, "--data-dir", dir, "--token", "my-cluster-secret", "--agent-token", "my-join-secret")
	if err != nil {
		t.Fatal(err)
	}
	if s.Token != "my-cluster-secret" || s.AgentToken != "my-join-secret" {
		t.Errorf("Token = %q, AgentToken = %q", s.Token, s.AgentToken)
	}
	for _, f := range []string{s.TokenFile(), s.AgentTokenFile()} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("token file %s written for a given token: %v", f, err)
		}
	}
}

// Either token may be given and the other generated: the agent token is
// generated even when --token is given, and a given agent token does not
// keep the cluster token from being generated.
func TestOneTokenGivenTheOtherGenerated(t *testing.T) {
	dir := t.TempDir()
	s, err := prepared(t, "--data-dir", dir, "--token", "my-cluster-secret")
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := os.ReadFile(s.AgentTokenFile())
	if len(s.AgentToken) != 64 || strings.TrimSpace(string(kept)) != s.AgentToken {
		t.Errorf("AgentToken %q, file %q", s.AgentToken, kept)
	}
	dir = t.TempDir()
	s, err = loadWith(t, []string{"--data-dir", dir}, map[string]string{"SKIFF_AGENT_TOKEN": "from-env"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if s.AgentToken != "from-env" || len(s.Token) != 64 {
		t.Errorf("Token %q, AgentToken %q", s.Token, s.AgentToken)
	}
	if _, err := os.Stat(s.AgentTokenFile()); !os.IsNotExist(err) {
		t.Errorf("agent token file written for a given agent token: %v", err)
	}
}

func TestTokenFileWrittenByHandIsTrimmed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("  handmade\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := prepared(t, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Token != "handmade" {
		t.Errorf("Token = %q", s.Token)
	}
}

func TestPrepareRejects(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) []string // returns extra flags
		want  string
	}{
		{"key file of the wrong size", func(t *testing.T, dir string) []string {
			p := filepath.Join(dir, "key")
			os.WriteFile(p, []byte(strings.Repeat("k", 44)), 0o600)
			return []string{"--encryption-key-file", p}
		}, `invalid --encryption-key-file "` + "%DIR%" + `/key": the file holds 44 bytes but must hold exactly 32 raw bytes`},
		{"default key file of the wrong size", func(t *testing.T, dir string) []string {
			os.MkdirAll(filepath.Join(dir, "data", "cred"), 0o700)
			os.WriteFile(filepath.Join(dir, "data", "cred", "encryption.key"), []byte("short"), 0o600)
			return nil
		}, `invalid --encryption-key-file "%DIR%/data/cred/encryption.key": the file holds 5 bytes`},
		{"given key file that does not exist", func(t *testing.T, dir string) []string {
			return []string{"--encryption-key-file", filepath.Join(dir, "missing.key")}
		}, `invalid --encryption-key-file "%DIR%/missing.key": the file does not exist`},
		{"empty token file", func(t *testing.T, dir string) []string {
			os.MkdirAll(filepath.Join(dir, "data"), 0o700)
			os.WriteFile(filepath.Join(dir, "data", "token"), []byte("\n"), 0o600)
			return nil
		}, `token file %DIR%/data/token must hold one token`},
		{"agent token file with two tokens", func(t *testing.T, dir string) []string {
			os.MkdirAll(filepath.Join(dir, "data"), 0o700)
			os.WriteFile(filepath.Join(dir, "data", "agent-token"), []byte("one two\n"), 0o600)
			return nil
		}, `token file %DIR%/data/agent-token must hold one token without spaces; delete it to have a new one generated, or set --agent-token`},
		// The agent token is copied to every node: as the admin's token it
		// would make each of them cluster-admin.
		{"agent token given equal to the token", func(t *testing.T, dir string) []string {
			return []string{"--token", "same-secret", "--agent-token", "same-secret"}
		}, `invalid --agent-token: it is the same as --token, the admin's token`},
		{"agent token file equal to the given token", func(t *testing.T, dir string) []string {
			os.MkdirAll(filepath.Join(dir, "data"), 0o700)
			os.WriteFile(filepath.Join(dir, "data", "agent-token"), []byte("same-secret\n"), 0o600)
			return []string{"--token", "same-secret"}
		}, `invalid --agent-token: it is the same as --token`},
		{"sqlite file in a missing directory", func(t *testing.T, dir string) []string {
			return []string{"--datastore-endpoint", filepath.Join(dir, "nope", "state.db")}
		}, `invalid --datastore-endpoint "%DIR%/nope/state.db": directory %DIR%/nope does not exist`},
		{"sqlite path that is a directory", func(t *testing.T, dir string) []string {
			return []string{"--datastore-endpoint", dir}
		}, `invalid --datastore-endpoint "%DIR%": it is a directory`},
		{"data dir that is a file", func(t *testing.T, dir string) []string {
			os.WriteFile(filepath.Join(dir, "data"), nil, 0o600)
			return nil
		}, `invalid --data-dir "%DIR%/data"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--data-dir", filepath.Join(dir, "data")}, tc.setup(t, dir)...)
			_, err := prepared(t, args...)
			want := strings.ReplaceAll(tc.want, "%DIR%", dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Prepare error %v\nwant it to contain %q", err, want)
			}
		})
	}
}

// Two servers started at once on one data directory must end up with the
// same token and key, never with one each.
func TestConcurrentFirstStartsAgree(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	servers := make([]*Server, n)
	for i := range servers {
		s, err := loadWith(t, []string{"--data-dir", dir}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Prepare(slog.New(slog.DiscardHandler))
		}()
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] != nil {
			t.Fatalf("Prepare %d: %v", i, errs[i])
		}
		if s.Token != servers[0].Token || s.AgentToken != servers[0].AgentToken || !bytes.Equal(s.encryptionKey, servers[0].encryptionKey) {
			t.Errorf("server %d disagrees on token or key", i)
		}
	}
}

func TestSecretFilesReadableByOthersAreReported(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent-token"), []byte("join\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := loadWith(t, []string{"--data-dir", dir}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	if err := s.Prepare(slog.New(slog.NewTextHandler(&logged, nil))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "readable by other users") || !strings.Contains(logged.String(), "setting=--token") {
		t.Errorf("no warning about the 0644 token file in %q", logged.String())
	}
	if !strings.Contains(logged.String(), "setting=--agent-token") {
		t.Errorf("no warning about the 0640 agent token file in %q", logged.String())
	}
	if n := strings.Count(logged.String(), "readable by other users"); n != 2 {
		t.Errorf("%d warnings, want 2 (the generated key file is 0600): %q", n, logged.String())
	}
}
