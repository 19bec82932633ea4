package main

import (
	"errors"
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
	root.AddCommand(newVersionCommand(), newServerCommand(), newAgentCommand(), newControllerManagerCommand(), newSchedulerCommand(), newLogDriverCommand())
	// Subcommands inherit this: flag mistakes get a pointer to --help.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return root
}

// usageError marks a mistake in the command line itself (unknown flag or
// command, missing argument), as opposed to a bad setting value.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

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
		if strings.TrimSpace(line) == "" {
			continue
		}
		fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), line)
	}
	var usage usageError
	if errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return 1
}
