// Package report turns the benchmark's measurements into one table: skiff,
// kine, how many times better skiff is, and the project's target for the
// rows that have one, with whether it was met. Missed targets are printed as
// missed; nothing here adjusts a figure.
package report
