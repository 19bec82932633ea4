package job

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

const maxCompletions = math.MaxInt32 // 2^31-1, the most an Indexed Job may have

func TestIndexSetParseAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in          string
		completions int32
		want        string
		len         int
	}{
		{"", 10, "", 0},
		{"0", 10, "0", 1},
		{"0,1", 10, "0,1", 2},   // two consecutive stay apart, as Kubernetes writes them
		{"0-1", 10, "0,1", 2},   // whatever they were written as
		{"0,1,2", 10, "0-2", 3}, // three are a range
		{"1,2,3,5", 10, "1-3,5", 4},
		{"0-2,3-5", 10, "0-5", 6}, // touching ranges join
		{"0-4,2-6", 10, "0-6", 7}, // overlapping ranges join
		{"7,3,5,4", 10, "3-5,7", 4},
		{"5-9,0-2", 10, "0-2,5-9", 8},
		{"3,3,3", 10, "3", 1},
		{"4-4", 10, "4", 1},
		{"3-1", 10, "", 0}, // ends before it starts
		{"x,-1,3-,-2-4,1-2-3, 4,+5", 10, "5", 1},
		{",,", 10, "", 0},
		{"0-9", 5, "0-4", 5},
		{"9", 5, "", 0},
		{"0-9", 0, "", 0},
		{"0-9", -3, "", 0},
		{"0-2147483646", maxCompletions, "0-2147483646", maxCompletions},
		{"2147483645,2147483646,2147483647", maxCompletions, "2147483645,2147483646", 2},
		{"0-99999999999999", maxCompletions, "0-2147483646", maxCompletions},
		{"99999999999999999999", maxCompletions, "", 0}, // past int64
		{"0,2-2147483646", maxCompletions, "0,2-2147483646", maxCompletions - 1},
		{"4294967296,4294967297", 5, "", 0}, // 0 and 1 in 32 bits, but not here
	} {
		s := parseIndexes(tc.in, tc.completions)
		if got := formatIndexes(s); got != tc.want {
			t.Errorf("parse(%q, %d) = %q, want %q", tc.in, tc.completions, got, tc.want)
		}
		if s.Len() != tc.len {
			t.Errorf("parse(%q, %d).Len() = %d, want %d", tc.in, tc.completions, s.Len(), tc.len)
		}
	}
}

func TestIndexSetHas(t *testing.T) {
	s := parseIndexes("1,3-5,9,2147483640-2147483646", maxCompletions)
	for i, want := range map[int]bool{
		0: false, 1: true, 2: false, 3: true, 4: true, 5: true, 6: false, 8: false, 9: true, 10: false,
		2147483639: false, 2147483640: true, 2147483646: true, 2147483647: false, -1: false,
	} {
		if s.Has(i) != want {
			t.Errorf("Has(%d) = %v, want %v", i, !want, want)
		}
	}
	if indexSet(nil).Has(0) {
		t.Error("the empty set has 0")
	}
}

func TestIndexSetInsert(t *testing.T) {
	for _, tc := range []struct {
		from string
		add  []int
		want string
	}{
		{"", []int{3}, "3"},
		{"", []int{3, 1, 2}, "1-3"},
		{"1-3", []int{2}, "1-3"},     // there already
		{"1-3", []int{4}, "1-4"},     // joins the run before
		{"5-7", []int{4}, "4-7"},     // joins the run after
		{"1-3,5-7", []int{4}, "1-7"}, // joins both
		{"1,5", []int{3}, "1,3,5"},   // joins neither
		{"5", []int{0}, "0,5"},       // before all
		{"0", []int{2147483646}, "0,2147483646"},
		{"2147483645", []int{2147483646, 2147483644}, "2147483644-2147483646"},
	} {
		s := parseIndexes(tc.from, maxCompletions)
		for _, i := range tc.add {
			s.Insert(i)
		}
		if s.String() != tc.want {
			t.Errorf("%q + %v = %q, want %q", tc.from, tc.add, s, tc.want)
		}
	}
}

func TestIndexSetUnionAndIntersection(t *testing.T) {
	for _, tc := range []struct{ a, b, union, inter string }{
		{"", "", "", ""},
		{"1-3", "", "1-3", ""},
		{"", "1-3", "1-3", ""},
		{"1-3", "4-6", "1-6", ""},        // touching
		{"1-3", "5-6", "1-3,5,6", ""},    // apart
		{"1-5", "3-8", "1-8", "3-5"},     // overlapping
		{"0-9", "2,4,6", "0-9", "2,4,6"}, // one inside the other
		{"0,2,4,6", "1,3,5", "0-6", ""},  // interleaved
		{"0-2147483646", "5,7", "0-2147483646", "5,7"},
		{"0-4,10-14", "3-11", "0-14", "3,4,10,11"},
	} {
		a, b := parseIndexes(tc.a, maxCompletions), parseIndexes(tc.b, maxCompletions)
		aBefore, bBefore := a.String(), b.String()
		if got := a.Union(b).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.a, tc.b, got, tc.union)
		}
		if got := b.Union(a).String(); got != tc.union {
			t.Errorf("%q ∪ %q = %q, want %q", tc.b, tc.a, got, tc.union)
		}
		if got := a.Intersection(b).String(); got != tc.inter {
			t.Errorf("%q ∩ %q = %q, want %q", tc.a, tc.b, got, tc.inter)
		}
		if got := b.Intersection(a).String(); got != tc.inter {
			t.Errorf("%q ∩ %q = %q, want %q", tc.b, tc.a, got, tc.inter)
		}
		if a.String() != aBefore || b.String() != bBefore {
			t.Errorf("union or intersection changed its operands: %q, %q", a, b)
		}
	}
}

func TestIndexSetMissing(t *testing.T) {
	for _, tc := range []struct {
		set   string
		limit int
		n     int
		want  []int
	}{
		{"", 5, 10, []int{0, 1, 2, 3, 4}},
		{"", 5, 2, []int{0, 1}},
		{"0-4", 5, 10, nil},
		{"1,3", 5, 10, []int{0, 2, 4}},
		{"0-2,5", 8, 10, []int{3, 4, 6, 7}},
		{"0-2,5", 8, 3, []int{3, 4, 6}},
		{"0-2,5", 0, 10, nil},
		{"2-9", 5, 10, []int{0, 1}}, // runs past the limit
		{"0-2147483640", maxCompletions, 10, []int{2147483641, 2147483642, 2147483643, 2147483644, 2147483645, 2147483646}},
		{"0-4999999,5000001,5000003", 10_000_000, 4, []int{5000000, 5000002, 5000004, 5000005}},
	} {
		var got []int
		for i := range parseIndexes(tc.set, maxCompletions).Missing(tc.limit) {
			if len(got) == tc.n {
				break
			}
			got = append(got, i)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("first %d missing from %q below %d: %v, want %v", tc.n, tc.set, tc.limit, got, tc.want)
		}
	}
}

func TestIndexesOf(t *testing.T) {
	if got := indexesOf(5, 1, 3, 2, 3, 7, 6).String(); got != "1-3,5-7" {
		t.Errorf("got %q", got)
	}
	if got := indexesOf().String(); got != "" {
		t.Errorf("got %q", got)
	}
}

// The set agrees with a plain map of its indexes whatever is added, in
// whatever order: random lists parsed, joined and added to one by one.
func TestIndexSetAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const limit = 60
	random := func() (indexSet, map[int]bool) {
		s, m := indexSet(nil), map[int]bool{}
		for range r.IntN(20) {
			i := r.IntN(limit)
			s.Insert(i)
			m[i] = true
		}
		return s, m
	}
	for range 500 {
		a, am := random()
		b, bm := random()
		u, in := a.Union(b), a.Intersection(b)
		var missing []int
		for i := range u.Missing(limit) {
			missing = append(missing, i)
		}
		var wantMissing []int
		for i := range limit {
			if a.Has(i) != am[i] || b.Has(i) != bm[i] {
				t.Fatalf("%q / %q: Has(%d) wrong", a, b, i)
			}
			if u.Has(i) != (am[i] || bm[i]) || in.Has(i) != (am[i] && bm[i]) {
				t.Fatalf("%q ∪/∩ %q: %d wrong", a, b, i)
			}
			if !am[i] && !bm[i] {
				wantMissing = append(wantMissing, i)
			}
		}
		if !slices.Equal(missing, wantMissing) {
			t.Fatalf("missing from %q: %v, want %v", u, missing, wantMissing)
		}
		if a.Len() != len(am) {
			t.Fatalf("%q: Len %d, want %d", a, a.Len(), len(am))
		}
		if back := parseIndexes(u.String(), limit); back.String() != u.String() || !slices.Equal(back, u) {
			t.Fatalf("%q does not read back as itself", u)
		}
		for k := 1; k < len(u); k++ {
			if u[k].first <= u[k-1].last+1 {
				t.Fatalf("%q: runs %v and %v touch", u, u[k-1], u[k])
			}
		}
	}
}

// An Indexed Job may have up to 2^31-1 completions: one whose list of done
// indexes covers nearly all of them counts the pod that succeeds and starts
// the few indexes left, lowest first, reading the lists as the ranges they
// are (a set of the indexes would take tens of gigabytes).
func TestIndexedJobWithHugeCompletions(t *testing.T) {
	j := newJob(indexedMode, completions(maxCompletions), parallel(3))
	j.Status.CompletedIndexes = "0-2147483640,2147483642"
	j.Status.Succeeded = 2147483642
	fx := newFixture(t, j, newPod("ok", corev1.PodSucceeded, index("2147483643")))
	fx.sync(t, "ns/work")
	got := fx.job(t)
	if got.Status.CompletedIndexes != "0-2147483640,2147483642,2147483643" || got.Status.Succeeded != 2147483643 {
		t.Errorf("completed %q, succeeded %d", got.Status.CompletedIndexes, got.Status.Succeeded)
	}
	var started []string
	for _, p := range fx.created(t) {
		started = append(started, p.Annotations[batchv1.JobCompletionIndexAnnotation])
	}
	slices.Sort(started) // created concurrently
	if want := []string{"2147483641", "2147483644", "2147483645"}; !slices.Equal(started, want) {
		t.Errorf("started indexes %v, want %v", started, want)
	}
	if hasCondition(got, batchv1.JobComplete, "") || hasCondition(got, batchv1.JobSuccessCriteriaMet, "") {
		t.Errorf("finished with indexes left: %+v", got.Status.Conditions)
	}
}

// A pod's completion index is compared with completions as read, as the
// index lists are: "4294967296" is 0 in 32 bits but is no index of a Job of
// 5 completions, so its pod is deleted as one with an index out of range,
// and its success completes nothing.
func TestPodIndexPastCompletionsNotCutTo32Bits(t *testing.T) {
	j := newJob(indexedMode, completions(5), parallel(1))
	fx := newFixture(t, j,
		newPod("ok", corev1.PodSucceeded, index("4294967297")),
		newPod("run", corev1.PodRunning, index("4294967296")))
	fx.sync(t, "ns/work")
	got := fx.job(t)
	if got.Status.CompletedIndexes != "" || got.Status.Succeeded != 0 {
		t.Errorf("completed %q, succeeded %d", got.Status.CompletedIndexes, got.Status.Succeeded)
	}
	if d := fx.deleted(); !slices.Equal(d, []string{"run"}) {
		t.Errorf("deleted %v, want the pod of index 4294967296", d)
	}
}
