// Package workload runs the benchmark's measurements — concurrent creates,
// compare-and-swap updates, full-prefix lists and watch delivery latency —
// against any target.Target, so skiff and kine see byte-for-byte the same
// requests. It reports what it saw, errors included; it never retries a
// measured operation, because a retry would hide the failures users report.
package workload
