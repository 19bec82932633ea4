package validation

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// A Job's status rules, as Kubernetes v1.33's ValidateJobStatusUpdate with
// the options its job status strategy computes under the default feature
// gates: JobManagedBy is beta and on since v1.32, which turns on the
// strengthened rules (a Job controlled by another controller through
// spec.managedBy must still make sense to the Job API's clients) and lets
// SuccessCriteriaMet be set on any Job. Most rules apply only when a field
// they look at changes, so a status stored before a rule (or made
// inconsistent by a spec edit, such as an elastic Indexed Job scaled down)
// does not block unrelated status writes. As every status write, the stored
// spec is not judged again.
//
// Two fixes of v1.33 patch releases are included: a suspended Job with
// completions=0 may finish without a startTime (kubernetes#132728), and a Job
// resuming (its Suspended condition going from True) may reset startTime
// (kubernetes#135129); the Job controller does both.

// jobStatusOptions is Kubernetes' JobStatusValidationOptions: which rules a
// status update is held to. The two rules that v1.33 runs only without
// AllowForSuccessCriteriaMetInExtendedScope (SuccessCriteriaMet only for
// Indexed Jobs with a success policy) never apply under the default gates
// and are left out.
type jobStatusOptions struct {
	rejectDecreasingSucceededCounter             bool
	rejectDecreasingFailedCounter                bool
	rejectDisablingTerminalCondition             bool
	rejectInvalidCompletedIndexes                bool
	rejectInvalidFailedIndexes                   bool
	rejectFailedIndexesOverlappingCompleted      bool
	rejectCompletedIndexesForNonIndexedJob       bool
	rejectFailedIndexesForNoBackoffLimitPerIndex bool
	rejectFailedJobWithoutFailureTarget          bool
	rejectCompleteJobWithoutSuccessCriteriaMet   bool
	rejectFinishedJobWithActivePods              bool
	rejectFinishedJobWithoutStartTime            bool
	rejectFinishedJobWithUncountedTerminatedPods bool
	rejectStartTimeUpdateForUnsuspendedJob       bool
	rejectCompletionTimeBeforeStartTime          bool
	rejectMutatingCompletionTime                 bool
	rejectCompleteJobWithoutCompletionTime       bool
	rejectNotCompleteJobWithCompletionTime       bool
	rejectCompleteJobWithFailedCondition         bool
	rejectCompleteJobWithFailureTargetCondition  bool
	rejectMoreReadyThanActivePods                bool
	rejectFinishedJobWithTerminatingPods         bool
}

// jobStatusOptionsFor is the job status strategy's getStatusValidationOptions
// with JobManagedBy on: a rule runs when a field it looks at changes.
func jobStatusOptionsFor(j, old *batchv1.Job) jobStatusOptions {
	s, o := &j.Status, &old.Status
	isIndexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	finishedChanged := jobFinished(j) != jobFinished(old)
	changed := func(t batchv1.JobConditionType) bool {
		return jobConditionTrue(s.Conditions, t) != jobConditionTrue(o.Conditions, t)
	}
	completeChanged, failedChanged := changed(batchv1.JobComplete), changed(batchv1.JobFailed)
	failureTargetChanged, successCriteriaMetChanged := changed(batchv1.JobFailureTarget), changed(batchv1.JobSuccessCriteriaMet)
	completedIndexesChanged := s.CompletedIndexes != o.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(s.FailedIndexes, o.FailedIndexes)
	activeChanged := s.Active != o.Active
	startTimeChanged := !ptr.Equal(s.StartTime, o.StartTime)
	completionTimeChanged := !ptr.Equal(s.CompletionTime, o.CompletionTime)
	uncountedChanged := !equality.Semantic.DeepEqual(s.UncountedTerminatedPods, o.UncountedTerminatedPods)
	readyChanged := !ptr.Equal(s.Ready, o.Ready)
	terminatingChanged := !ptr.Equal(s.Terminating, o.Terminating)
	suspendedWithZeroCompletions := ptr.Deref(j.Spec.Suspend, false) && ptr.Equal(j.Spec.Completions, ptr.To[int32](0))
	resuming := jobConditionTrue(o.Conditions, batchv1.JobSuspended) && !jobConditionTrue(s.Conditions, batchv1.JobSuspended)

	return jobStatusOptions{
		// An Indexed Job whose completions follow its parallelism can be
		// scaled down, its succeeded indexes past the new completions
		// dropped.
		rejectDecreasingSucceededCounter:             !isIndexed || !ptr.Equal(j.Spec.Completions, j.Spec.Parallelism),
		rejectDecreasingFailedCounter:                true,
		rejectDisablingTerminalCondition:             true,
		rejectInvalidCompletedIndexes:                completedIndexesChanged,
		rejectInvalidFailedIndexes:                   failedIndexesChanged,
		rejectCompletedIndexesForNonIndexedJob:       completedIndexesChanged,
		rejectFailedIndexesForNoBackoffLimitPerIndex: failedIndexesChanged,
		rejectFailedIndexesOverlappingCompleted:      failedIndexesChanged || completedIndexesChanged,
		rejectFailedJobWithoutFailureTarget:          failedChanged || failedIndexesChanged,
		rejectCompleteJobWithoutSuccessCriteriaMet:   completeChanged || successCriteriaMetChanged,
		rejectFinishedJobWithActivePods:              finishedChanged || activeChanged,
		rejectFinishedJobWithoutStartTime:            (finishedChanged || startTimeChanged) && !suspendedWithZeroCompletions,
		rejectFinishedJobWithUncountedTerminatedPods: finishedChanged || uncountedChanged,
		rejectStartTimeUpdateForUnsuspendedJob:       startTimeChanged && !resuming,
		rejectCompletionTimeBeforeStartTime:          startTimeChanged || completionTimeChanged,
		rejectMutatingCompletionTime:                 true,
		rejectNotCompleteJobWithCompletionTime:       completeChanged || completionTimeChanged,
		rejectCompleteJobWithoutCompletionTime:       completeChanged || completionTimeChanged,
		rejectCompleteJobWithFailedCondition:         completeChanged || failedChanged,
		rejectCompleteJobWithFailureTargetCondition:  completeChanged || failureTargetChanged,
		rejectMoreReadyThanActivePods:                readyChanged || activeChanged,
		rejectFinishedJobWithTerminatingPods:         finishedChanged || terminatingChanged,
	}
}

// validateJobStatusUpdate checks a Job's status write against the stored Job.
func validateJobStatusUpdate(j, old *batchv1.Job) field.ErrorList {
	opts := jobStatusOptionsFor(j, old)
	p := field.NewPath("status")
	errs := validateJobStatus(j, p, opts)
	conds := p.Child("conditions")
	s, o := &j.Status, &old.Status
	if opts.rejectDisablingTerminalCondition {
		for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
			if jobConditionTrue(o.Conditions, t) && !jobConditionTrue(s.Conditions, t) {
				errs = append(errs, field.Invalid(conds, field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
			}
		}
	}
	if opts.rejectDecreasingFailedCounter && s.Failed < o.Failed {
		errs = append(errs, field.Invalid(p.Child("failed"), s.Failed, "cannot decrease the failed counter"))
	}
	if opts.rejectDecreasingSucceededCounter && s.Succeeded < o.Succeeded {
		errs = append(errs, field.Invalid(p.Child("succeeded"), s.Succeeded, "cannot decrease the succeeded counter"))
	}
	// A completionTime may be dropped from a Job that has not finished
	// (to repair it); dropping it from a Complete one is refused above.
	if opts.rejectMutatingCompletionTime && s.CompletionTime != nil && o.CompletionTime != nil && !ptr.Equal(s.CompletionTime, o.CompletionTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be mutated"))
	}
	// A Job starting (startTime set for the first time) is the one change
	// allowed to an unsuspended Job's startTime.
	if opts.rejectStartTimeUpdateForUnsuspendedJob && o.StartTime != nil && !ptr.Equal(o.StartTime, s.StartTime) && !ptr.Deref(j.Spec.Suspend, false) {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if jobConditionTrue(o.Conditions, batchv1.JobSuccessCriteriaMet) && !jobConditionTrue(s.Conditions, batchv1.JobSuccessCriteriaMet) {
		errs = append(errs, field.Invalid(conds, field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if jobConditionTrue(o.Conditions, batchv1.JobComplete) && !jobConditionTrue(o.Conditions, batchv1.JobSuccessCriteriaMet) &&
		jobConditionTrue(s.Conditions, batchv1.JobSuccessCriteriaMet) {
		errs = append(errs, field.Invalid(conds, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return errs
}

// validateJobStatus is the part of the rules that looks at the new status
// alone (and at the Job's spec).
func validateJobStatus(j *batchv1.Job, p *field.Path, opts jobStatusOptions) field.ErrorList {
	s := &j.Status
	errs := nonNegatives(p, count{"active", int64(s.Active)}, count{"succeeded", int64(s.Succeeded)}, count{"failed", int64(s.Failed)})
	if s.Ready != nil {
		errs = append(errs, nonNegative(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, nonNegative(int64(*s.Terminating), p.Child("terminating"))...)
	}
	if u := s.UncountedTerminatedPods; u != nil {
		up := p.Child("uncountedTerminatedPods")
		seen := sets.New[types.UID]()
		for _, list := range []struct {
			name string
			uids []types.UID
		}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
			for i, uid := range list.uids {
				switch ip := up.Child(list.name).Index(i); {
				case uid == "":
					errs = append(errs, field.Invalid(ip, uid, "must not be empty"))
				case seen.Has(uid):
					errs = append(errs, field.Duplicate(ip, uid))
				default:
					seen.Insert(uid)
				}
			}
		}
	}

	conds := p.Child("conditions")
	invalidConds := func(msg string) { errs = append(errs, field.Invalid(conds, field.OmitValueType{}, msg)) }
	complete, failed := jobConditionTrue(s.Conditions, batchv1.JobComplete), jobConditionTrue(s.Conditions, batchv1.JobFailed)
	failureTarget := jobConditionTrue(s.Conditions, batchv1.JobFailureTarget)
	successCriteriaMet := jobConditionTrue(s.Conditions, batchv1.JobSuccessCriteriaMet)
	if opts.rejectCompleteJobWithFailedCondition && complete && failed {
		invalidConds("cannot set Complete=True and Failed=true conditions")
	}
	if opts.rejectCompleteJobWithFailureTargetCondition && complete && failureTarget {
		invalidConds("cannot set Complete=True and FailureTarget=true conditions")
	}
	if opts.rejectNotCompleteJobWithCompletionTime && s.CompletionTime != nil && !complete {
		errs = append(errs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if opts.rejectCompleteJobWithoutCompletionTime && s.CompletionTime == nil && complete {
		errs = append(errs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if opts.rejectCompletionTimeBeforeStartTime && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		errs = append(errs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be set before startTime"))
	}
	if opts.rejectFailedJobWithoutFailureTarget && failed && !failureTarget {
		invalidConds("cannot set Failed=True condition without the FailureTarget=true condition")
	}
	if opts.rejectCompleteJobWithoutSuccessCriteriaMet && complete && !successCriteriaMet {
		invalidConds("cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	}
	finished := jobFinished(j)
	if opts.rejectFinishedJobWithActivePods && s.Active > 0 && finished {
		errs = append(errs, field.Invalid(p.Child("active"), s.Active, "active>0 is invalid for finished job"))
	}
	if opts.rejectFinishedJobWithoutStartTime && s.StartTime == nil && finished {
		errs = append(errs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if u := s.UncountedTerminatedPods; opts.rejectFinishedJobWithUncountedTerminatedPods && finished && u != nil && len(u.Failed)+len(u.Succeeded) > 0 {
		errs = append(errs, field.Invalid(p.Child("uncountedTerminatedPods"), u, "uncountedTerminatedPods needs to be empty for finished job"))
	}
	if opts.rejectInvalidCompletedIndexes && j.Spec.Completions != nil {
		if _, err := indexesTotal(s.CompletedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, fmt.Sprintf("error parsing completedIndexes: %s", err)))
		}
	}
	if opts.rejectInvalidFailedIndexes && j.Spec.Completions != nil && j.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
		if _, err := indexesTotal(*s.FailedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), s.FailedIndexes, fmt.Sprintf("error parsing failedIndexes: %s", err)))
		}
	}
	isIndexed := ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if opts.rejectCompletedIndexesForNonIndexedJob && len(s.CompletedIndexes) != 0 && !isIndexed {
		errs = append(errs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	// A non-indexed Job has no backoffLimitPerIndex, so this also keeps
	// failedIndexes off it.
	if opts.rejectFailedIndexesForNoBackoffLimitPerIndex && j.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
		errs = append(errs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if opts.rejectFailedIndexesOverlappingCompleted && j.Spec.Completions != nil && s.FailedIndexes != nil {
		if err := indexesOverlap(s.CompletedIndexes, *s.FailedIndexes, *j.Spec.Completions); err != nil {
			errs = append(errs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, err.Error()))
		}
	}
	if opts.rejectFinishedJobWithTerminatingPods && s.Terminating != nil && *s.Terminating > 0 && finished {
		errs = append(errs, field.Invalid(p.Child("terminating"), s.Terminating, "terminating>0 is invalid for finished job"))
	}
	if opts.rejectMoreReadyThanActivePods && s.Ready != nil && *s.Ready > s.Active {
		errs = append(errs, field.Invalid(p.Child("ready"), *s.Ready, "cannot set more ready pods than active"))
	}
	if successCriteriaMet && failed {
		invalidConds("cannot set SuccessCriteriaMet=True and Failed=true conditions")
	}
	if successCriteriaMet && failureTarget {
		invalidConds("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	}
	if j.Spec.SuccessPolicy != nil && !successCriteriaMet && complete {
		invalidConds("cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
	}
	return errs
}

// jobConditionTrue: the Job has a condition of type t with status True.
func jobConditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobFinished: a Complete or Failed condition is true.
func jobFinished(j *batchv1.Job) bool {
	return jobConditionTrue(j.Status.Conditions, batchv1.JobComplete) || jobConditionTrue(j.Status.Conditions, batchv1.JobFailed)
}

// indexesTotal parses a list of completion indexes ("1,3-5,7"), each below
// completions and in increasing order, and returns how many it holds; the
// errors are Kubernetes'.
func indexesTotal(list string, completions int32) (int32, error) {
	if list == "" {
		return 0, nil
	}
	var last *int32
	var total int32
	for _, interval := range strings.Split(list, ",") {
		x, y, err := indexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last != nil && *last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", *last, x)
		}
		total += y - x + 1
		last = &y
	}
	return total, nil
}

// indexInterval parses "x" or "x-y" (x < y), each below completions.
func indexInterval(interval string, completions int32) (int32, int32, error) {
	limits := strings.Split(interval, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
	}
	bound := func(s string) (int32, error) {
		v, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", s)
		}
		if v >= int(completions) {
			return 0, fmt.Errorf("too large index: %q", s)
		}
		return int32(v), nil
	}
	x, err := bound(limits[0])
	if err != nil {
		return 0, 0, err
	}
	if len(limits) == 1 {
		return x, x, nil
	}
	y, err := bound(limits[1])
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

// indexesOverlap reports the first index both lists hold, walking them as
// Kubernetes does; intervals that do not parse are skipped (their format is
// reported by its own rule).
func indexesOverlap(completed, failed string, completions int32) error {
	if completed == "" || failed == "" {
		return nil
	}
	cs, fs := strings.Split(completed, ","), strings.Split(failed, ",")
	ci, fi := 0, 0
	cx, cy, cErr := indexInterval(cs[ci], completions)
	fx, fy, fErr := indexInterval(fs[fi], completions)
	for ci < len(cs) && fi < len(fs) {
		switch {
		case cErr != nil:
			if ci++; ci < len(cs) {
				cx, cy, cErr = indexInterval(cs[ci], completions)
			}
		case fErr != nil:
			if fi++; fi < len(fs) {
				fx, fy, fErr = indexInterval(fs[fi], completions)
			}
		case cx <= fy && fx <= cy:
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(cx, fx))
		case cx <= fx:
			if ci++; ci < len(cs) {
				cx, cy, cErr = indexInterval(cs[ci], completions)
			}
		default:
			if fi++; fi < len(fs) {
				fx, fy, fErr = indexInterval(fs[fi], completions)
			}
		}
	}
	return nil
}
