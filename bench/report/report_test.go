package report

import (
	"errors"
	"strings"
	"testing"
)

func TestRatioAndTarget(t *testing.T) {
	five := &Target{MinRatio: 5, Text: "≥ 5×"}
	below := &Target{SkiffBelow: 50, Text: "p99 < 50 ms"}
	tests := []struct {
		name      string
		row       Row
		ratio     float64
		ratioOK   bool
		met, know bool
	}{
		{"throughput met", Row{Better: HigherIsBetter, Skiff: Cell{OK: true, Value: 5000}, Kine: Cell{OK: true, Value: 1000}, Target: five}, 5, true, true, true},
		{"throughput missed", Row{Better: HigherIsBetter, Skiff: Cell{OK: true, Value: 4000}, Kine: Cell{OK: true, Value: 1000}, Target: five}, 4, true, false, true},
		{"latency ratio inverts", Row{Better: LowerIsBetter, Skiff: Cell{OK: true, Value: 10}, Kine: Cell{OK: true, Value: 40}}, 4, true, false, false},
		{"absolute target met", Row{Better: LowerIsBetter, Skiff: Cell{OK: true, Value: 12}, Kine: Cell{OK: true, Value: 900}, Target: below}, 75, true, true, true},
		{"absolute target missed", Row{Better: LowerIsBetter, Skiff: Cell{OK: true, Value: 50}, Kine: Cell{OK: true, Value: 900}, Target: below}, 18, true, false, true},
		{"kine failed", Row{Better: HigherIsBetter, Skiff: Cell{OK: true, Value: 10}, Kine: Failed(errors.New("boom")), Target: five}, 0, false, false, false},
		{"skiff failed", Row{Better: LowerIsBetter, Skiff: Failed(errors.New("boom")), Kine: Cell{OK: true, Value: 1}, Target: below}, 0, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ratio, ok := tc.row.Ratio()
			if ok != tc.ratioOK || (ok && ratio != tc.ratio) {
				t.Fatalf("Ratio = %v, %v; want %v, %v", ratio, ok, tc.ratio, tc.ratioOK)
			}
			met, known := tc.row.Met()
			if met != tc.met || known != tc.know {
				t.Fatalf("Met = %v, %v; want %v, %v", met, known, tc.met, tc.know)
			}
		})
	}
}

func TestWriteMarkdown(t *testing.T) {
	rep := &Report{Header: []string{"run at noon"}}
	rep.Add(Row{Dialect: "sqlite", Metric: "writes/s, 16 writers", Skiff: Cell{OK: true, Value: 6000, Text: FormatRate(6000)},
		Kine: Cell{OK: true, Value: 1000, Text: FormatRate(1000)}, Target: &Target{MinRatio: 5, Text: "≥ 5× kine"}})
	rep.Add(Row{Dialect: "postgres", Metric: "list", Skiff: Failed(errors.New("a|b")), Kine: Cell{OK: true, Value: 3, Text: FormatMs(3)}})
	rep.Note("kine logged %d errors", 2)
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"run at noon",
		"| sqlite | writes/s, 16 writers | 6,000/s | 1,000/s | 6.00× | ≥ 5× kine | yes |",
		"| postgres | list | failed: a/b | 3.00 ms | – |  |  |",
		"- kine logged 2 errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for in, want := range map[float64]string{0: "0/s", 999.6: "1,000/s", 1234567: "1,234,567/s", 42: "42/s"} {
		if got := FormatRate(in); got != want {
			t.Errorf("FormatRate(%v) = %q, want %q", in, got, want)
		}
	}
}
