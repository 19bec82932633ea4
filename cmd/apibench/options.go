package main

import (
	"fmt"
	"io"
	"time"
)

// options are the command's settings.
type options struct {
	clients  int
	duration time.Duration
	listSize int
	listRuns int
	watchers int
	writes   int
	// crudWatchers watch the pods while they are created, read and
	// updated, as a scheduler and kubelets do in a cluster.
	crudWatchers int
	workDir      string
	progress     io.Writer
}

func (o options) validate() error {
	switch {
	case o.clients < 1:
		return fmt.Errorf("-clients must be at least 1, got %d", o.clients)
	case o.duration <= 0:
		return fmt.Errorf("-duration must be positive, got %s", o.duration)
	case o.listSize < 1 || o.listRuns < 1:
		return fmt.Errorf("-list-size and -list-runs must be at least 1, got %d and %d", o.listSize, o.listRuns)
	case o.crudWatchers < 0:
		return fmt.Errorf("-crud-watchers must not be negative, got %d", o.crudWatchers)
	case o.watchers < 1 || o.writes < 1:
		return fmt.Errorf("-watchers and -fanout-writes must be at least 1, got %d and %d", o.watchers, o.writes)
	}
	return nil
}

func (o options) logf(format string, args ...any) {
	if o.progress != nil {
		fmt.Fprintf(o.progress, "apibench: "+format+"\n", args...)
	}
}
