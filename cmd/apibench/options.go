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
	workDir  string
	progress io.Writer
}

func (o options) validate() error {
	switch {
	case o.clients < 1:
		return fmt.Errorf("-clients must be at least 1, got %d", o.clients)
	case o.duration <= 0:
		return fmt.Errorf("-duration must be positive, got %s", o.duration)
	case o.listSize < 1 || o.listRuns < 1:
		return fmt.Errorf("-list-size and -list-runs must be at least 1, got %d and %d", o.listSize, o.listRuns)
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
