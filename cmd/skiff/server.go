package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skiffkube/skiff/config"
	"github.com/skiffkube/skiff/storage"
)

func newServerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a skiff server: the datastore and, as they arrive, the API server and controllers",
		Long: `Run a skiff server. State is kept in an embedded SQLite file in the data
directory, or in PostgreSQL when --datastore-endpoint is a postgres:// URL
(several servers may share one database). Every flag can also be set with
its SKIFF_* environment variable or as a key of the --config YAML file;
a flag beats the environment, which beats the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.LoadServer(cmd.Flags())
			if err != nil {
				return err
			}
			log := cfg.NewLogger(cmd.ErrOrStderr())
			slog.SetDefault(log)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go func() {
				// After the first signal a second one kills the process at
				// once, in case shutdown hangs.
				<-ctx.Done()
				stop()
			}()
			return runServer(ctx, cfg, log)
		},
	}
	config.AddServerFlags(cmd.Flags())
	return cmd
}

// runServer builds every component of a server from cfg, runs them until ctx
// ends, and then stops them in the reverse order of their start. New
// components (API server, controllers, node agent) are started here, after
// the store they depend on.
func runServer(ctx context.Context, cfg *config.Server, log *slog.Logger) (err error) {
	if err := cfg.Prepare(log); err != nil {
		return err
	}

	store, err := storage.New(ctx, cfg.StorageConfig(log))
	if err != nil {
		return fmt.Errorf("opening the datastore %s: %w", cfg.RedactedEndpoint(), err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the datastore: %w", cerr))
			return
		}
		log.Info("datastore closed")
	}()

	rev, err := store.Revision(ctx)
	if err != nil {
		return fmt.Errorf("reading the datastore's revision: %w", err)
	}
	log.Info("skiff is ready", "endpoint", cfg.RedactedEndpoint(), "revision", rev, "dataDir", cfg.DataDir)

	<-ctx.Done()
	log.Info("shutting down", "reason", context.Cause(ctx))
	return nil
}
