package kineproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Version is the kine release the benchmark compares against. It is the one
// whose numbers are recorded in the project's notes.
const Version = "v0.17.5"

// Module is kine's Go module path.
const Module = "github.com/k3s-io/kine"

// DefaultCacheDir is where a built kine binary is kept between runs:
// $XDG_CACHE_HOME (or ~/.cache)/skiff-bench/kine-<version>. It is outside the
// repository so the binary can never be committed by accident.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kineproc: no user cache directory (set -kine to a kine binary): %w", err)
	}
	return filepath.Join(base, "skiff-bench", "kine-"+Version), nil
}

// CacheDir is dir, or DefaultCacheDir when dir is empty.
func CacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return DefaultCacheDir()
}

// Ensure returns the path of a kine binary in cacheDir, building it with
// `go install github.com/k3s-io/kine@Version` (CGO_ENABLED=0) if it is not
// there yet. A cold build downloads and compiles kine's dependencies and takes
// minutes; build output goes to log. Concurrent callers (a test and the
// command) are safe: each builds into its own temporary directory and the
// result is renamed into place atomically.
func Ensure(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	bin := filepath.Join(cacheDir, "kine")
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("kineproc: create cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return "", fmt.Errorf("kineproc: create build dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("kineproc: the go command is needed to build kine (or pass a kine binary with -kine)")
	}
	cmd := exec.CommandContext(ctx, goBin, "install", Module+"@"+Version)
	// Run outside any module so the caller's go.mod and GOFLAGS=-mod=… cannot
	// interfere with `go install pkg@version`.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOBIN="+tmp, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if log == nil {
		log = io.Discard
	}
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kineproc: go install %s@%s: %w", Module, Version, err)
	}
	if err := os.Rename(filepath.Join(tmp, "kine"), bin); err != nil {
		return "", fmt.Errorf("kineproc: move built kine into %s: %w", cacheDir, err)
	}
	return bin, nil
}
