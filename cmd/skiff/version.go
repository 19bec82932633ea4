package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and gitCommit are set at build time:
//
//	go build -tags grpcnotrace,nomsgpack -ldflags "-X main.version=v0.2.0 -X main.gitCommit=$(git rev-parse HEAD)" ./cmd/skiff
//
// They describe skiff itself. The Kubernetes version the API server reports
// to clients (for kubectl's version skew checks) is a separate constant.
var (
	version   = "v0.1.0-dev"
	gitCommit = ""
)

// commit is gitCommit, or else the revision the Go toolchain stamped into the
// binary when it was built inside a git checkout.
func commit() string {
	if gitCommit != "" {
		return gitCommit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of skiff, the git commit and the Go version it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "skiff %s\ngit commit: %s\ngo version: %s\nplatform: %s/%s\n",
				version, commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
