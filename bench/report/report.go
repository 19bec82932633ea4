package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Direction says which way a figure is better.
type Direction int

const (
	// HigherIsBetter: throughput.
	HigherIsBetter Direction = iota
	// LowerIsBetter: latency.
	LowerIsBetter
)

// Cell is one system's figure in a row.
type Cell struct {
	// OK is false when the measurement could not be made; Text then says why.
	OK bool
	// Value is what the ratio and the target are computed from (writes/s,
	// or milliseconds).
	Value float64
	// Text is the figure as printed, with any detail (percentiles, errors).
	Text string
}

// Failed is a cell for a measurement that could not be made.
func Failed(err error) Cell {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:117] + "..."
	}
	return Cell{Text: "failed: " + strings.ReplaceAll(msg, "|", "/")}
}

// Target is a goal printed beside a row.
type Target struct {
	// MinRatio, if set, requires skiff to be at least this many times better
	// than kine.
	MinRatio float64
	// SkiffBelow, if set, requires skiff's Value to be below it.
	SkiffBelow float64
	// Text describes the target in the table.
	Text string
}

// Row is one measurement of both systems.
type Row struct {
	Dialect string
	Metric  string
	Better  Direction
	Skiff   Cell
	Kine    Cell
	Target  *Target
}

// Ratio is how many times better skiff is than kine: skiff/kine for
// throughput, kine/skiff for latency. ok is false if either is missing.
func (r Row) Ratio() (float64, bool) {
	if !r.Skiff.OK || !r.Kine.OK || r.Skiff.Value <= 0 || r.Kine.Value <= 0 {
		return 0, false
	}
	if r.Better == HigherIsBetter {
		return r.Skiff.Value / r.Kine.Value, true
	}
	return r.Kine.Value / r.Skiff.Value, true
}

// Met reports whether the row's target holds; known is false when there is
// no target or not enough data to judge it.
func (r Row) Met() (met, known bool) {
	if r.Target == nil {
		return false, false
	}
	if r.Target.MinRatio > 0 {
		ratio, ok := r.Ratio()
		if !ok {
			return false, false
		}
		return ratio >= r.Target.MinRatio, true
	}
	if r.Target.SkiffBelow > 0 {
		if !r.Skiff.OK {
			return false, false
		}
		return r.Skiff.Value < r.Target.SkiffBelow, true
	}
	return false, false
}

// Report is a whole benchmark run.
type Report struct {
	// Header lines: date, machine, versions, settings.
	Header []string
	Rows   []Row
	// Notes are printed under the table (errors seen, what was skipped).
	Notes []string
}

// Add appends a row.
func (rep *Report) Add(r Row) { rep.Rows = append(rep.Rows, r) }

// Note appends a note.
func (rep *Report) Note(format string, args ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...))
}

// WriteMarkdown prints the report as a Markdown table, readable as plain
// text in a terminal and pasteable into the README as it is.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, h := range rep.Header {
		b.WriteString(h)
		b.WriteString("  \n")
	}
	b.WriteString("\n| dialect | measurement | skiff | kine | skiff vs kine | target | met |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rep.Rows {
		ratio := "–"
		if v, ok := r.Ratio(); ok {
			ratio = fmt.Sprintf("%s×", num(v))
		}
		target, met := "", ""
		if r.Target != nil {
			target = r.Target.Text
			met = "n/a"
			if m, known := r.Met(); known {
				met = "no"
				if m {
					met = "yes"
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Dialect, r.Metric, r.Skiff.Text, r.Kine.Text, ratio, target, met)
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range rep.Notes {
			b.WriteString("- ")
			b.WriteString(n)
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num prints a ratio with two significant decimals below 10 and none above.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Ms is a duration in milliseconds, the unit of every latency cell.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FormatMs prints milliseconds with sensible precision.
func FormatMs(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.2f ms", ms)
	}
}

// FormatRate prints a per-second figure with thousands separators.
func FormatRate(v float64) string {
	n := int64(math.Round(v))
	s := fmt.Sprintf("%d", n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out) + "/s"
}
