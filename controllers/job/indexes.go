package job

import (
	"cmp"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// indexSet is a set of completion indexes kept as runs of consecutive indexes, ascending, apart
// and not touching (two runs that touch are one), as Kubernetes keeps status.completedIndexes
// and status.failedIndexes (its orderedIntervals). An Indexed Job may have up to 2^31-1
// completions and its lists say "0-9999999": what a set costs follows its runs, never the
// indexes they cover.
type indexSet []indexRun

// indexRun is the indexes first to last, both included (first <= last).
type indexRun struct{ first, last int }

// indexesOf returns the set of the given indexes, in any order, repeats allowed.
func indexesOf(ix ...int) indexSet {
	sorted := slices.Clone(ix)
	slices.Sort(sorted)
	var s indexSet
	for _, i := range sorted {
		s = s.appendRun(indexRun{i, i})
	}
	return s
}

// parseIndexes reads an index list ("1,3-5,7"), keeping the indexes below completions.
// The list may be anything a status writer stored: an index is compared as read, never cut to
// 32 bits (4294967296 is not index 0); a part that is no index or range ("x", "3-", "1-2-3")
// is skipped, as is a range that ends before it starts; parts out of order or overlapping are
// merged.
func parseIndexes(s string, completions int32) indexSet {
	if s == "" || completions <= 0 {
		return nil
	}
	var runs []indexRun
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		a, b = max(a, 0), min(b, int(completions)-1)
		if a <= b {
			runs = append(runs, indexRun{a, b})
		}
	}
	// A list the controller or Kubernetes wrote is in order already; sort only what is not.
	if !slices.IsSortedFunc(runs, byFirst) {
		slices.SortFunc(runs, byFirst)
	}
	var out indexSet
	for _, r := range runs {
		out = out.appendRun(r)
	}
	return out
}

func byFirst(a, b indexRun) int { return cmp.Compare(a.first, b.first) }

// formatIndexes writes indexes as Kubernetes does (see indexSet.String).
func formatIndexes(s indexSet) string { return s.String() }

// String writes the set in the form Kubernetes uses: ascending, runs of three or more as "a-b"
// ("1,3-5,7"; 0 and 1 stay "0,1").
func (s indexSet) String() string {
	var b []byte
	for _, r := range s {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(r.first), 10)
		switch {
		case r.last == r.first:
			continue
		case r.last == r.first+1: // only three or more consecutive indexes are compressed
			b = append(b, ',')
		default:
			b = append(b, '-')
		}
		b = strconv.AppendInt(b, int64(r.last), 10)
	}
	return string(b)
}

// Len is the number of indexes in the set.
func (s indexSet) Len() int {
	n := 0
	for _, r := range s {
		n += r.last - r.first + 1
	}
	return n
}

// find returns the position of the first run that ends at or after i.
func (s indexSet) find(i int) int {
	return sort.Search(len(s), func(k int) bool { return s[k].last >= i })
}

// Has reports whether i is in the set.
func (s indexSet) Has(i int) bool {
	k := s.find(i)
	return k < len(s) && s[k].first <= i
}

// Insert adds i to the set, joining it to the runs it touches.
func (s *indexSet) Insert(i int) {
	runs := *s
	k := runs.find(i)
	if k < len(runs) && runs[k].first <= i {
		return // there already
	}
	joinsLeft := k > 0 && runs[k-1].last == i-1
	joinsRight := k < len(runs) && runs[k].first == i+1
	switch {
	case joinsLeft && joinsRight:
		runs[k-1].last = runs[k].last
		runs = slices.Delete(runs, k, k+1)
	case joinsLeft:
		runs[k-1].last = i
	case joinsRight:
		runs[k].first = i
	default:
		runs = slices.Insert(runs, k, indexRun{i, i})
	}
	*s = runs
}

// Union returns the indexes in either set; s and o are left as they are.
func (s indexSet) Union(o indexSet) indexSet {
	out := make(indexSet, 0, len(s)+len(o))
	i, j := 0, 0
	for i < len(s) || j < len(o) {
		if j == len(o) || (i < len(s) && s[i].first <= o[j].first) {
			out = out.appendRun(s[i])
			i++
		} else {
			out = out.appendRun(o[j])
			j++
		}
	}
	return out
}

// Intersection returns the indexes in both sets.
func (s indexSet) Intersection(o indexSet) indexSet {
	var out indexSet
	i, j := 0, 0
	for i < len(s) && j < len(o) {
		if first, last := max(s[i].first, o[j].first), min(s[i].last, o[j].last); first <= last {
			out = append(out, indexRun{first, last})
		}
		if s[i].last < o[j].last {
			i++
		} else {
			j++
		}
	}
	return out
}

// Missing yields, ascending, the indexes below limit that are not in the set, stepping over
// each run at once: finding the first few costs the runs before them, not the indexes.
func (s indexSet) Missing(limit int) iter.Seq[int] {
	return func(yield func(int) bool) {
		next := 0
		for _, r := range s {
			for ; next < min(r.first, limit); next++ {
				if !yield(next) {
					return
				}
			}
			if r.last >= limit-1 {
				return
			}
			next = max(next, r.last+1)
		}
		for ; next < limit; next++ {
			if !yield(next) {
				return
			}
		}
	}
}

// appendRun adds r to a set whose runs all start at or before r.first, joining it to the last
// run if they overlap or touch.
func (s indexSet) appendRun(r indexRun) indexSet {
	if n := len(s); n > 0 && r.first-1 <= s[n-1].last {
		s[n-1].last = max(s[n-1].last, r.last)
		return s
	}
	return append(s, r)
}
