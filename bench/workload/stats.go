package workload

import (
	"slices"
	"time"
)

// Stats summarises a set of latencies.
type Stats struct {
	N    int
	Mean time.Duration
	P50  time.Duration
	P99  time.Duration
	Max  time.Duration
}

// Summarize computes Stats; it sorts samples in place.
func Summarize(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Stats{
		N:    len(samples),
		Mean: sum / time.Duration(len(samples)),
		P50:  percentile(samples, 0.50),
		P99:  percentile(samples, 0.99),
		Max:  samples[len(samples)-1],
	}
}

// percentile uses the nearest-rank method on sorted samples: the smallest
// sample such that at least p of all samples are less than or equal to it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p*float64(len(sorted)) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}
