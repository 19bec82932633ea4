package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// EncryptionKeySize is the size of the AES-256 key for secrets at rest.
const EncryptionKeySize = 32

// Prepare makes the data directory usable and loads the secrets kept in it:
// it creates the directory (and db/ for the default SQLite file), reads the
// token from <data-dir>/token or generates one there on first start unless
// --token was given, the same for the agent token (<data-dir>/agent-token,
// --agent-token), and reads the encryption key, generating it on first
// start when --encryption-key-file was left at its default. Files it creates
// are 0600 and written atomically, so a crash never leaves a half-written key.
func (s *Server) Prepare(log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if err := mkdirPrivate(s.DataDir); err != nil {
		return fmt.Errorf("invalid --%s %q: %w", keyDataDir, s.DataDir, err)
	}
	if err := s.prepareSQLite(); err != nil {
		return err
	}
	if err := s.loadToken(log); err != nil {
		return err
	}
	return s.loadEncryptionKey(log)
}

// prepareSQLite creates db/ for the default database file. A path the
// operator chose must already have its directory: creating directories from
// a typo would hide the typo.
func (s *Server) prepareSQLite() error {
	ep := s.Endpoint()
	if ep == "" || s.IsPostgres() {
		return nil
	}
	if s.DatastoreEndpoint == "" {
		if err := mkdirPrivate(filepath.Dir(ep)); err != nil {
			return fmt.Errorf("invalid --%s %q: %w", keyDataDir, s.DataDir, err)
		}
		return nil
	}
	if fi, err := os.Stat(ep); err == nil && fi.IsDir() {
		return fmt.Errorf("invalid --%s %q: it is a directory; name a SQLite file inside it", keyDatastoreEndpoint, s.DatastoreEndpoint)
	}
	dir := filepath.Dir(ep)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("invalid --%s %q: directory %s does not exist", keyDatastoreEndpoint, s.DatastoreEndpoint, dir)
	}
	return nil
}

func (s *Server) loadToken(log *slog.Logger) error {
	if !s.tokenGiven {
		t, err := loadTokenFile(log, s.TokenFile(), keyToken, "cluster token")
		if err != nil {
			return err
		}
		s.Token = t
	}
	if !s.agentTokenGiven {
		t, err := loadTokenFile(log, s.AgentTokenFile(), keyAgentToken, "agent join token")
		if err != nil {
			return err
		}
		s.AgentToken = t
	}
	if s.AgentToken == s.Token {
		// The agent token is handed to every node; as the admin's it would
		// make each of them cluster-admin.
		return fmt.Errorf("invalid --%s: it is the same as --%s, the admin's token; give agents a token of their own (or leave --%s unset to have one generated in %s)",
			keyAgentToken, keyToken, keyAgentToken, s.AgentTokenFile())
	}
	return nil
}

// loadTokenFile reads the token kept at path, generating it on first start;
// key names the setting that replaces the file, what the token in messages.
func loadTokenFile(log *slog.Logger, path, key, what string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		buf := make([]byte, 32)
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("generating a %s: %w", what, err)
		}
		created, werr := writeSecretFile(path, []byte(hex.EncodeToString(buf)+"\n"))
		if werr != nil {
			return "", fmt.Errorf("writing the generated %s: %w", what, werr)
		}
		if created {
			log.Info("generated the "+what, "file", path)
		}
		// Either ours or one a concurrent start wrote first: read what is there.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("reading the %s (set --%s or fix %s): %w", what, key, path, err)
	}
	warnIfShared(log, path, "--"+key)
	token := strings.TrimSpace(string(data))
	if token == "" || strings.IndexFunc(token, isSpaceOrControl) >= 0 {
		return "", fmt.Errorf("token file %s must hold one token without spaces; delete it to have a new one generated, or set --%s", path, key)
	}
	return token, nil
}

func (s *Server) loadEncryptionKey(log *slog.Logger) error {
	path := s.EncryptionKeyFile
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !s.keyFileGiven {
		if merr := mkdirPrivate(filepath.Dir(path)); merr != nil {
			return fmt.Errorf("invalid --%s %q: %w", keyEncryptionKeyFile, path, merr)
		}
		buf := make([]byte, EncryptionKeySize)
		if _, rerr := rand.Read(buf); rerr != nil {
			return fmt.Errorf("generating an encryption key: %w", rerr)
		}
		created, werr := writeSecretFile(path, buf)
		if werr != nil {
			return fmt.Errorf("invalid --%s %q: writing a new key: %w", keyEncryptionKeyFile, path, werr)
		}
		if created {
			// Several servers sharing one PostgreSQL database must share the
			// key too, or each reads the others' secrets as garbage.
			log.Warn("generated a new encryption key for secrets; back it up, and give every server of this cluster the same file",
				"file", path, "setting", "--"+keyEncryptionKeyFile)
		}
		key, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("invalid --%s %q: the file does not exist; create it with 32 random bytes (head -c 32 /dev/urandom > %s; chmod 600 %s) or leave the setting unset to have one generated in the data directory",
			keyEncryptionKeyFile, path, path, path)
	}
	if err != nil {
		return fmt.Errorf("invalid --%s %q: %w", keyEncryptionKeyFile, path, err)
	}
	if len(key) != EncryptionKeySize {
		return fmt.Errorf("invalid --%s %q: the file holds %d bytes but must hold exactly %d raw bytes (not hex or base64)",
			keyEncryptionKeyFile, path, len(key), EncryptionKeySize)
	}
	warnIfShared(log, path, "--"+keyEncryptionKeyFile)
	s.encryptionKey = key
	return nil
}

// warnIfShared logs when a secret file can be read by other users: skiff
// still starts (the operator may have reasons), but says how to fix it.
func warnIfShared(log *slog.Logger, path, setting string) {
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("secret file is readable by other users; run chmod 600 on it", "file", path, "mode", fi.Mode().Perm().String(), "setting", setting)
	}
}

// TokenFile is where a generated token is kept.
func (s *Server) TokenFile() string {
	return filepath.Join(s.DataDir, tokenFile)
}

// AgentTokenFile is where a generated agent join token is kept.
func (s *Server) AgentTokenFile() string {
	return filepath.Join(s.DataDir, agentTokenFile)
}

// mkdirPrivate creates dir (and parents) readable by the owner only, and
// checks that an existing path is a directory.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// writeSecretFile creates path with data, mode 0600, unless it exists. The
// data goes to a temporary file that is synced and then hard-linked into
// place: linking fails if another process created path first, and a crash
// leaves either no file or the whole file, never a short one. It reports
// whether this call created the file.
func writeSecretFile(path string, data []byte) (bool, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	if d, err := os.Open(dir); err == nil {
		// Make the new directory entry durable too.
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}
