package validation

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestJobStatusUpdates: a Job's status write is checked as Kubernetes
// v1.33's ValidateJobStatusUpdate checks it, with the options its status
// strategy computes under the default feature gates (JobManagedBy beta, on):
// most rules apply only when a field they look at changes. Its spec (the
// stored one) is not judged again.
func TestJobStatusUpdates(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	meta := metav1.ObjectMeta{Name: "pi", Namespace: "default", ResourceVersion: "1"}
	// A spec Kubernetes would refuse today (no selector, no template): a
	// status write must not be refused for it.
	plain := batchv1.JobSpec{Completions: ptr.To[int32](5), Parallelism: ptr.To[int32](2)}
	indexed := batchv1.JobSpec{Completions: ptr.To[int32](5), Parallelism: ptr.To[int32](2), CompletionMode: ptr.To(batchv1.IndexedCompletion)}
	perIndex := *indexed.DeepCopy()
	perIndex.BackoffLimitPerIndex = ptr.To[int32](1)
	elastic := *indexed.DeepCopy()
	elastic.Parallelism = ptr.To[int32](5)
	withPolicy := *indexed.DeepCopy()
	withPolicy.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
	suspendedZero := batchv1.JobSpec{Completions: ptr.To[int32](0), Suspend: ptr.To(true)}
	suspended := batchv1.JobSpec{Completions: ptr.To[int32](5), Suspend: ptr.To(true)}

	job := func(spec batchv1.JobSpec, st batchv1.JobStatus) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: meta, Spec: spec, Status: st}
	}
	cond := func(pairs ...string) []batchv1.JobCondition {
		var cs []batchv1.JobCondition
		for i := 0; i < len(pairs); i += 2 {
			cs = append(cs, batchv1.JobCondition{Type: batchv1.JobConditionType(pairs[i]), Status: corev1.ConditionStatus(pairs[i+1])})
		}
		return cs
	}
	complete := func(st batchv1.JobStatus) batchv1.JobStatus {
		st.Conditions = cond("SuccessCriteriaMet", "True", "Complete", "True")
		st.StartTime, st.CompletionTime = &t0, &t1
		return st
	}
	failed := func(st batchv1.JobStatus) batchv1.JobStatus {
		st.Conditions = cond("FailureTarget", "True", "Failed", "True")
		st.StartTime = &t0
		return st
	}
	running := batchv1.JobStatus{StartTime: &t0, Active: 2, Ready: ptr.To[int32](1)}

	cases := []struct {
		name     string
		new, old *batchv1.Job
		want     string
	}{
		{"a running job's progress", job(plain, batchv1.JobStatus{StartTime: &t0, Active: 2, Ready: ptr.To[int32](2), Terminating: ptr.To[int32](1), Succeeded: 1,
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a"}, Failed: []types.UID{"b"}}}),
			job(plain, running), ""},
		{"a job completing", job(plain, complete(batchv1.JobStatus{Succeeded: 5, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0)})), job(plain, running), ""},
		{"a job failing", job(plain, failed(batchv1.JobStatus{Failed: 7})), job(plain, running), ""},
		{"negative counts", job(plain, batchv1.JobStatus{StartTime: &t0, Active: -1, Succeeded: -1, Failed: -1, Ready: ptr.To[int32](-1), Terminating: ptr.To[int32](-1)}),
			job(plain, batchv1.JobStatus{StartTime: &t0}),
			"status.active: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.succeeded: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.failed: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.ready: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.terminating: Invalid value: -1: must be greater than or equal to 0\n" +
				"status.failed: Invalid value: -1: cannot decrease the failed counter\n" +
				"status.succeeded: Invalid value: -1: cannot decrease the succeeded counter"},
		{"uncounted pods empty or twice", job(plain, batchv1.JobStatus{StartTime: &t0,
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a", ""}, Failed: []types.UID{"a"}}}),
			job(plain, batchv1.JobStatus{StartTime: &t0}),
			`status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty` + "\n" +
				`status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`},
		{"more ready than active", job(plain, batchv1.JobStatus{StartTime: &t0, Active: 1, Ready: ptr.To[int32](2)}), job(plain, running),
			"status.ready: Invalid value: 2: cannot set more ready pods than active"},
		{"more ready than active, stored so, unchanged", job(plain, batchv1.JobStatus{StartTime: &t0, Active: 1, Ready: ptr.To[int32](2), Succeeded: 1}),
			job(plain, batchv1.JobStatus{StartTime: &t0, Active: 1, Ready: ptr.To[int32](2)}), ""},
		{"complete and failed", job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("Complete", "True", "Failed", "True")}), job(plain, running),
			"status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions\n" +
				"status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition\n" +
				"status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
		{"complete with a failure target", job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("SuccessCriteriaMet", "True", "FailureTarget", "True", "Complete", "True")}),
			job(plain, running),
			"status.conditions: Invalid value: cannot set Complete=True and FailureTarget=true conditions\n" +
				"status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"},
		{"completion time without Complete", job(plain, batchv1.JobStatus{StartTime: &t0, Active: 2, Ready: ptr.To[int32](1), CompletionTime: &t1}), job(plain, running),
			`status.completionTime: Invalid value: "2025-01-02T03:05:05Z": cannot set completionTime when there is no Complete=True condition`},
		{"Complete without completion time", job(plain, batchv1.JobStatus{StartTime: &t0, Conditions: cond("SuccessCriteriaMet", "True", "Complete", "True")}), job(plain, running),
			"status.completionTime: Required value: completionTime is required for Complete jobs"},
		{"completion before start", job(plain, batchv1.JobStatus{StartTime: &t1, CompletionTime: &t0, Conditions: cond("SuccessCriteriaMet", "True", "Complete", "True")}),
			job(plain, batchv1.JobStatus{StartTime: &t1}),
			`status.completionTime: Invalid value: "2025-01-02T03:04:05Z": completionTime cannot be set before startTime`},
		{"Failed without FailureTarget", job(plain, batchv1.JobStatus{StartTime: &t0, Conditions: cond("Failed", "True")}), job(plain, running),
			"status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition"},
		{"Complete without SuccessCriteriaMet", job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("Complete", "True")}), job(plain, running),
			"status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
		{"finished with active, terminating and uncounted pods, without a start", job(plain, batchv1.JobStatus{Active: 1, Terminating: ptr.To[int32](1),
			Conditions:              cond("FailureTarget", "True", "Failed", "True"),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"a"}}}),
			job(plain, batchv1.JobStatus{}),
			"status.active: Invalid value: 1: active>0 is invalid for finished job\n" +
				"status.startTime: Required value: startTime is required for finished job\n" +
				`status.uncountedTerminatedPods: Invalid value: {"failed":["a"]}: uncountedTerminatedPods needs to be empty for finished job` + "\n" +
				"status.terminating: Invalid value: 1: terminating>0 is invalid for finished job"},
		{"a suspended job with no completions completes without a start", job(suspendedZero, batchv1.JobStatus{CompletionTime: &t1,
			Conditions: cond("SuccessCriteriaMet", "True", "Complete", "True")}), job(suspendedZero, batchv1.JobStatus{}), ""},
		{"completedIndexes badly formed", job(indexed, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "1,0"}), job(indexed, running),
			`status.completedIndexes: Invalid value: "1,0": error parsing completedIndexes: non-increasing order, previous: 1, current: 0`},
		{"completedIndexes past completions", job(indexed, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "0-5"}), job(indexed, running),
			`status.completedIndexes: Invalid value: "0-5": error parsing completedIndexes: too large index: "5"`},
		{"completedIndexes not numbers", job(indexed, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "1-2-3,x"}), job(indexed, running),
			`status.completedIndexes: Invalid value: "1-2-3,x": error parsing completedIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`},
		{"completedIndexes stored badly, unchanged", job(indexed, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "x", Active: 1}),
			job(indexed, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "x"}), ""},
		{"completedIndexes of a non-indexed job", job(plain, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "0"}), job(plain, running),
			`status.completedIndexes: Invalid value: "0": cannot set non-empty completedIndexes when non-indexed completion mode`},
		{"failedIndexes badly formed", job(perIndex, batchv1.JobStatus{StartTime: &t0, FailedIndexes: ptr.To("3,x")}), job(perIndex, running),
			`status.failedIndexes: Invalid value: "3,x": error parsing failedIndexes: cannot convert string to integer for index: "x"`},
		{"failedIndexes without backoffLimitPerIndex", job(indexed, batchv1.JobStatus{StartTime: &t0, FailedIndexes: ptr.To("1")}), job(indexed, running),
			`status.failedIndexes: Invalid value: "1": cannot set non-null failedIndexes when backoffLimitPerIndex is null`},
		{"failedIndexes overlapping completedIndexes", job(perIndex, batchv1.JobStatus{StartTime: &t0, CompletedIndexes: "0-2", FailedIndexes: ptr.To("2-3")}),
			job(perIndex, running),
			`status.failedIndexes: Invalid value: "2-3": failedIndexes and completedIndexes overlap at index: 2`},
		{"terminal condition dropped", job(plain, batchv1.JobStatus{StartTime: &t0}), job(plain, failed(batchv1.JobStatus{})),
			"status.conditions: Invalid value: cannot disable the terminal Failed=True condition\n" +
				"status.conditions: Invalid value: cannot disable the terminal FailureTarget=True condition"},
		{"Complete dropped", job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("SuccessCriteriaMet", "True")}),
			job(plain, complete(batchv1.JobStatus{})),
			"status.completionTime: Invalid value: \"2025-01-02T03:05:05Z\": cannot set completionTime when there is no Complete=True condition\n" +
				"status.conditions: Invalid value: cannot disable the terminal Complete=True condition"},
		{"counters decreased", job(plain, batchv1.JobStatus{StartTime: &t0, Failed: 1, Succeeded: 1}), job(plain, batchv1.JobStatus{StartTime: &t0, Failed: 2, Succeeded: 2}),
			"status.failed: Invalid value: 1: cannot decrease the failed counter\n" +
				"status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"},
		{"succeeded lowered with an elastic indexed job scaled down", job(elastic, batchv1.JobStatus{StartTime: &t0, Succeeded: 1, CompletedIndexes: "0"}),
			job(elastic, batchv1.JobStatus{StartTime: &t0, Succeeded: 2, CompletedIndexes: "0,6"}), ""},
		{"completion time moved", job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t0, Conditions: cond("SuccessCriteriaMet", "True", "Complete", "True")}),
			job(plain, complete(batchv1.JobStatus{})),
			`status.completionTime: Invalid value: "2025-01-02T03:04:05Z": completionTime cannot be mutated`},
		{"start time moved", job(plain, batchv1.JobStatus{StartTime: &t1}), job(plain, batchv1.JobStatus{StartTime: &t0}),
			"status.startTime: Required value: startTime cannot be removed for unsuspended job"},
		{"start time dropped", job(plain, batchv1.JobStatus{}), job(plain, batchv1.JobStatus{StartTime: &t0}),
			"status.startTime: Required value: startTime cannot be removed for unsuspended job"},
		{"start time dropped while suspended", job(suspended, batchv1.JobStatus{}), job(suspended, batchv1.JobStatus{StartTime: &t0}), ""},
		{"start time reset as the job resumes", job(plain, batchv1.JobStatus{StartTime: &t1, Conditions: cond("Suspended", "False")}),
			job(plain, batchv1.JobStatus{StartTime: &t0, Conditions: cond("Suspended", "True")}), ""},
		{"SuccessCriteriaMet dropped", job(withPolicy, batchv1.JobStatus{StartTime: &t0}), job(withPolicy, batchv1.JobStatus{StartTime: &t0, Conditions: cond("SuccessCriteriaMet", "True")}),
			"status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition"},
		{"SuccessCriteriaMet after Complete", job(plain, complete(batchv1.JobStatus{})),
			job(plain, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("Complete", "True")}),
			"status.conditions: Invalid value: cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"},
		{"SuccessCriteriaMet with Failed", job(plain, batchv1.JobStatus{StartTime: &t0, Conditions: cond("SuccessCriteriaMet", "True", "FailureTarget", "True", "Failed", "True")}),
			job(plain, running),
			"status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and Failed=true conditions\n" +
				"status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"},
		{"a success policy's Complete without SuccessCriteriaMet", job(withPolicy, batchv1.JobStatus{StartTime: &t0, CompletionTime: &t1, Conditions: cond("Complete", "True")}),
			job(withPolicy, running),
			"status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition\n" +
				"status.conditions: Invalid value: cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorTexts(ValidateStatusUpdate(tc.new, tc.old)); got != tc.want {
				t.Errorf("errors:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
