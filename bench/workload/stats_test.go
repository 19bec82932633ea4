package workload

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted on purpose
	}
	tests := []struct {
		name                string
		in                  []time.Duration
		n                   int
		p50, p99, max, mean time.Duration
	}{
		{"empty", nil, 0, 0, 0, 0, 0},
		{"one", ms(7), 1, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"four", ms(4, 1, 3, 2), 4, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond, 2500 * time.Microsecond},
		{"hundred", ms(hundred...), 100, 50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond, 50500 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.in)
			if s.N != tc.n || s.P50 != tc.p50 || s.P99 != tc.p99 || s.Max != tc.max || s.Mean != tc.mean {
				t.Fatalf("Summarize = %+v, want n=%d p50=%v p99=%v max=%v mean=%v", s, tc.n, tc.p50, tc.p99, tc.max, tc.mean)
			}
		})
	}
}
