package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "skiff",
		Short: "A single-binary Kubernetes-API orchestrator that keeps all cluster state in SQL",
		// Errors are printed once by execute, without the usage text that
		// would bury a one-line message about a bad setting.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newVersionCommand(), newServerCommand())
	return root
}

// execute runs the command line and returns the process exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	// One line per problem (config errors are joined with newlines).
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), line)
	}
	if strings.Contains(err.Error(), "flag") || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return 1
}
