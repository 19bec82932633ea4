package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// maxParallelismForIndexedJob bounds indexed jobs, whose per-index
// bookkeeping grows with parallelism.
const maxParallelismForIndexedJob = 100000

// maxCronJobNameLength leaves room for the 11-character suffix the CronJob
// controller appends to make Job names, which must stay DNS-1035 labels.
const maxCronJobNameLength = 52

func validateJob(j *batchv1.Job) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateJobSpec(&j.Spec, specPath)
	if j.Spec.Selector == nil {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(j.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))...)
	}
	// Whether generated or manual, the selector must pick the Job's own pods.
	if selector, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !selector.Matches(labels.Set(j.Spec.Template.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), j.Spec.Template.Labels, selectorMismatch))
	}
	return errs
}

func validateJobSpec(s *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Parallelism != nil {
		errs = append(errs, nonNegative(int64(*s.Parallelism), fldPath.Child("parallelism"))...)
	}
	if s.Completions != nil {
		errs = append(errs, nonNegative(int64(*s.Completions), fldPath.Child("completions"))...)
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*s.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if s.BackoffLimit != nil {
		errs = append(errs, nonNegative(int64(*s.BackoffLimit), fldPath.Child("backoffLimit"))...)
	}
	if s.TTLSecondsAfterFinished != nil {
		errs = append(errs, nonNegative(int64(*s.TTLSecondsAfterFinished), fldPath.Child("ttlSecondsAfterFinished"))...)
	}
	if s.CompletionMode != nil {
		switch *s.CompletionMode {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if s.Completions == nil {
				errs = append(errs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
			}
			if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
				errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *s.Parallelism,
					fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
			}
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), *s.CompletionMode,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if s.BackoffLimitPerIndex != nil && (s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion) {
		errs = append(errs, field.Forbidden(fldPath.Child("backoffLimitPerIndex"), "requires indexed completion mode"))
	}
	if p := s.PodReplacementPolicy; p != nil {
		switch *p {
		case batchv1.TerminatingOrFailed:
			if s.PodFailurePolicy != nil {
				errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		case batchv1.Failed:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}

	errs = append(errs, validatePodTemplateSpec(&s.Template, fldPath.Child("template"))...)
	// A Job's pods must end: restarting them forever would never complete it.
	rp := s.Template.Spec.RestartPolicy
	if rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(fldPath.Child("template", "spec", "restartPolicy"), rp,
			[]corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	} else if rp == corev1.RestartPolicyOnFailure && s.PodFailurePolicy != nil {
		errs = append(errs, field.Invalid(fldPath.Child("template", "spec", "restartPolicy"), rp,
			fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateJobUpdate: a Job's pod template and selector are fixed once the Job
// exists; only a Job that is suspended and has never started may retarget
// its pods' scheduling (labels, annotations, node selector, affinity,
// tolerations, scheduling gates), which is what queueing systems rely on.
func validateJobUpdate(newJ, oldJ *batchv1.Job) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateImmutableField(newJ.Spec.Selector, oldJ.Spec.Selector, specPath.Child("selector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(newJ.Spec.CompletionMode, oldJ.Spec.CompletionMode, specPath.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(newJ.Spec.PodFailurePolicy, oldJ.Spec.PodFailurePolicy, specPath.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(newJ.Spec.BackoffLimitPerIndex, oldJ.Spec.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
	// Indexed jobs may scale elastically: completions follow parallelism.
	elastic := newJ.Spec.CompletionMode != nil && *newJ.Spec.CompletionMode == batchv1.IndexedCompletion &&
		newJ.Spec.Completions != nil && newJ.Spec.Parallelism != nil && *newJ.Spec.Completions == *newJ.Spec.Parallelism
	if !elastic {
		errs = append(errs, apivalidation.ValidateImmutableField(newJ.Spec.Completions, oldJ.Spec.Completions, specPath.Child("completions"))...)
	}

	oldT := oldJ.Spec.Template.DeepCopy()
	suspendedNeverStarted := oldJ.Spec.Suspend != nil && *oldJ.Spec.Suspend && oldJ.Status.StartTime == nil
	if suspendedNeverStarted {
		n := &newJ.Spec.Template
		oldT.Labels = n.Labels
		oldT.Annotations = n.Annotations
		oldT.Spec.NodeSelector = n.Spec.NodeSelector
		oldT.Spec.Affinity = n.Spec.Affinity
		oldT.Spec.Tolerations = n.Spec.Tolerations
		oldT.Spec.SchedulingGates = n.Spec.SchedulingGates
	}
	if !equality.Semantic.DeepEqual(*oldT, newJ.Spec.Template) {
		errs = append(errs, field.Invalid(specPath.Child("template"), newJ.Spec.Template, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	var errs field.ErrorList
	s := &cj.Spec
	specPath := field.NewPath("spec")
	if s.Schedule == "" {
		errs = append(errs, field.Required(specPath.Child("schedule"), ""))
	} else {
		errs = append(errs, validateSchedule(s.Schedule, specPath.Child("schedule"))...)
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*s.StartingDeadlineSeconds, specPath.Child("startingDeadlineSeconds"))...)
	}
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(specPath.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("concurrencyPolicy"), s.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	if s.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.SuccessfulJobsHistoryLimit), specPath.Child("successfulJobsHistoryLimit"))...)
	}
	if s.FailedJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*s.FailedJobsHistoryLimit), specPath.Child("failedJobsHistoryLimit"))...)
	}

	tplPath := specPath.Child("jobTemplate")
	errs = append(errs, metav1validation.ValidateLabels(s.JobTemplate.Labels, tplPath.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(s.JobTemplate.Annotations, tplPath.Child("metadata", "annotations"))...)
	errs = append(errs, validateJobSpec(&s.JobTemplate.Spec, tplPath.Child("spec"))...)
	// The CronJob controller generates each Job's selector.
	if s.JobTemplate.Spec.Selector != nil {
		errs = append(errs, field.Invalid(tplPath.Child("spec", "selector"), s.JobTemplate.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := s.JobTemplate.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(tplPath.Child("spec", "manualSelector"), *m, []string{"nil", "false"}))
	}
	return errs
}

// validateSchedule parses the schedule as the CronJob controller will, with
// the standard five fields and the @hourly-style descriptors.
func validateSchedule(schedule string, fldPath *field.Path) field.ErrorList {
	if _, err := cron.ParseStandard(schedule); err != nil {
		return field.ErrorList{field.Invalid(fldPath, schedule, err.Error())}
	}
	return nil
}

// TZ= or CRON_TZ= in a schedule is refused on new CronJobs (spec.timeZone
// says it), but, as in Kubernetes, a CronJob stored with one may keep it
// through updates, though not beside a timeZone: the controller warns about
// it and runs it as written. The time zone is checked when set or changed
// only, as Kubernetes does, so a CronJob stored with one this server's tzdata
// lacks can still be edited (the controller tells of it: UnknownTimeZone).
func validateCronJobCreate(cj *batchv1.CronJob) field.ErrorList {
	errs := append(refuseScheduleTZ(cj.Spec.Schedule), validateTimeZone(cj.Spec.TimeZone)...)
	// On create only, as Kubernetes: one stored with a longer name may still be updated.
	if len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	return errs
}

func validateCronJobUpdate(newCJ, oldCJ *batchv1.CronJob) field.ErrorList {
	var errs field.ErrorList
	if !ptr.Equal(newCJ.Spec.TimeZone, oldCJ.Spec.TimeZone) {
		errs = validateTimeZone(newCJ.Spec.TimeZone)
	}
	switch {
	case !strings.Contains(oldCJ.Spec.Schedule, "TZ"):
		errs = append(errs, refuseScheduleTZ(newCJ.Spec.Schedule)...)
	case strings.Contains(newCJ.Spec.Schedule, "TZ") && newCJ.Spec.TimeZone != nil:
		errs = append(errs, field.Invalid(field.NewPath("spec", "schedule"), newCJ.Spec.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	}
	return errs
}

// tzNamePart is what IANA allows in a component of a time zone name, with the
// digits and '+' of legacy names ("Etc/GMT+5"), as Kubernetes checks it.
var tzNamePart = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)

// validateTimeZone checks spec.timeZone in Kubernetes' words: a name the
// server's tzdata knows, and not the server's own "Local".
func validateTimeZone(tz *string) field.ErrorList {
	if tz == nil {
		return nil
	}
	p := field.NewPath("spec", "timeZone")
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !tzNamePart.MatchString(part) {
			return field.ErrorList{field.Invalid(p, *tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, *tz, err.Error()))
	}
	return errs
}

func refuseScheduleTZ(schedule string) field.ErrorList {
	if strings.Contains(schedule, "TZ") {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "schedule"), schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")}
	}
	return nil
}
