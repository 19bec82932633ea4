package validation

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hostileIndexes are index lists an API client may send in a Job's status.
var hostileIndexes = []string{
	"", ",", ",,", "1,,2", "a-b", "5-2", "2-2", "-", "-1", "1-", "--", "1--2", "0-1-2",
	"99999999999999999999", "0-99999999999999999999", "-99999999999999999999",
	"2147483647", "2147483648", "4294967296", "0-2147483646", "+1", "+1-+3", " 1", "1 ", "0x1",
	"1,0", "0,0", "0-1,1-2", "0,2,1", "ü", "\x00", strings.Repeat("1,", 10000) + "1",
	strings.Repeat("-", 1000), "0-4,", ",0-4",
}

// hostileStatusWrite judges a status write of an Indexed Job with a per-index
// backoff limit whose completedIndexes and failedIndexes are those given.
func hostileStatusWrite(completed, failed string, completions int32) string {
	t0 := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "d", ResourceVersion: "1"},
		Spec: batchv1.JobSpec{Completions: ptr.To(completions), Parallelism: ptr.To[int32](1),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimitPerIndex: ptr.To[int32](1)},
		Status: batchv1.JobStatus{StartTime: &t0}}
	n := old.DeepCopy()
	n.Status.CompletedIndexes, n.Status.FailedIndexes = completed, ptr.To(failed)
	return errorTexts(ValidateStatusUpdate(n, old))
}

// FuzzJobStatusIndexes: whatever index lists a client writes, judging them
// ends, without a panic.
func FuzzJobStatusIndexes(f *testing.F) {
	for _, s := range hostileIndexes {
		f.Add(s, s, int32(5))
	}
	f.Fuzz(func(t *testing.T, completed, failed string, completions int32) {
		hostileStatusWrite(completed, failed, completions)
	})
}

// TestJobStatusHostileIndexes: garbage index lists in a status write are
// judged without a panic or a hang, whatever completions is, and refused with
// Kubernetes' messages.
func TestJobStatusHostileIndexes(t *testing.T) {
	for _, c := range []int32{0, 1, 5, 2147483647, -1} {
		for _, a := range hostileIndexes {
			for _, b := range hostileIndexes {
				hostileStatusWrite(a, b, c)
			}
		}
	}
	for list, want := range map[string]string{
		"a-b":                  `cannot convert string to integer for index: "a"`,
		"5-2":                  `too large index: "5"`,
		"3-2":                  `non-increasing order, previous: 3, current: 2`,
		"2-2":                  `non-increasing order, previous: 2, current: 2`,
		"1,,2":                 `cannot convert string to integer for index: ""`,
		"-1":                   `cannot convert string to integer for index: ""`,
		"1-":                   `cannot convert string to integer for index: ""`,
		"99999999999999999999": `cannot convert string to integer for index: "99999999999999999999"`,
		"4294967296":           `too large index: "4294967296"`,
		"0-1-2":                `the fragment "0-1-2" violates the requirement that an index interval can have at most two parts separated by '-'`,
	} {
		got := hostileStatusWrite(list, "", 5)
		if w := `status.completedIndexes: Invalid value: "` + list + `": error parsing completedIndexes: ` + want; got != w {
			t.Errorf("completedIndexes %q:\n%s\nwant\n%s", list, got, w)
		}
	}
	if n, err := indexesTotal("0-2147483646", 2147483647); err != nil || n != 2147483647 {
		t.Errorf("every index of the largest Job: %d, %v", n, err)
	}
}
