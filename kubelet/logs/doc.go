// Package logs reads container log files written in the CRI format (see
// kubelet/logdriver) the way `kubectl logs` asks for them: the last N lines,
// lines since a time, a byte limit, with or without timestamps, and
// following the file while the container runs. Lines that are not CRI
// records (a log written raw) are passed through as they are.
package logs
