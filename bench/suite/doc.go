// Package suite is the whole skiff-versus-kine benchmark: for each SQL
// dialect it starts skiff's store and kine on fresh databases, runs the same
// workloads against both (writes, compare-and-swap updates, lists, watch
// latency across two instances) and assembles the report. cmd/storebench is
// a thin flag parser around Run.
package suite
