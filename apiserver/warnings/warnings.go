// Package warnings computes the per-kind warnings kube-apiserver v1.33's
// registry strategies give (WarningsOnCreate, WarningsOnUpdate): what a
// write is allowed to do but probably should not (deprecated node labels
// and annotations, duplicate ports and environment variables, names that
// make bad hostnames). The write handler sends them as Warning headers,
// which kubectl prints as "Warning: ...".
//
// Only the main resource's writes (and the scale subresource, which writes
// through the main strategy) warn: the status strategies return none.
// Updates warn only when what the warnings are about changed, as upstream
// does by comparing generations, so that a controller's routine writes, and
// a user's edit of a label, do not repeat warnings nobody can act on; a
// Service's are given on every update, as upstream's Service strategy
// gives them.
package warnings

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// OnCreate returns the warnings for creating obj, which has been defaulted
// and validated. Kinds without warnings get none.
func OnCreate(obj runtime.Object) []string {
	switch o := obj.(type) {
	case *corev1.Pod:
		var w []string
		if msgs := dnsLabelProblems(o.Name); len(msgs) != 0 {
			w = append(w, fmt.Sprintf("metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
		}
		// Upstream emits a pod's AppArmor annotation warnings while it
		// syncs annotations and fields (PrepareForCreate), and its
		// template-only check leaves them out for pods.
		w = append(w, podAppArmorAnnotations(o)...)
		return append(w, podSpecAndMeta(nil, &o.Spec, &o.ObjectMeta)...)
	case *corev1.PodTemplate:
		return podSpecAndMeta(field.NewPath("template"), &o.Template.Spec, &o.Template.ObjectMeta)
	case *appsv1.Deployment:
		return append(workloadName(o.Name), template(field.NewPath("spec", "template"), &o.Spec.Template)...)
	case *appsv1.ReplicaSet:
		return append(workloadName(o.Name), template(field.NewPath("spec", "template"), &o.Spec.Template)...)
	case *corev1.ReplicationController:
		w := workloadName(o.Name)
		if o.Spec.Template != nil {
			w = append(w, template(field.NewPath("spec", "template"), o.Spec.Template)...)
		}
		return w
	case *appsv1.StatefulSet:
		// Upstream's create path leaves "spec" out of the claim
		// templates' paths, and its update path spells it "Spec"; both
		// are kept, since the texts are what clients see.
		return statefulSet(o, func(i int) *field.Path { return field.NewPath("spec", "volumeClaimTemplates").Index(i) }, true)
	case *appsv1.DaemonSet:
		return template(field.NewPath("spec", "template"), &o.Spec.Template)
	case *batchv1.Job:
		return append(workloadName(o.Name), jobSpec(field.NewPath("spec"), &o.Spec)...)
	case *batchv1.CronJob:
		// TZ in the schedule is refused on create (validation), so only
		// updates warn about it.
		return append(workloadName(o.Name), jobSpec(field.NewPath("spec", "jobTemplate", "spec"), &o.Spec.JobTemplate.Spec)...)
	case *networkingv1.Ingress:
		return ingressClassAnnotation(o)
	case *networkingv1.NetworkPolicy:
		return networkPolicyCIDRs(o)
	case *corev1.Service:
		return service(o)
	}
	return nil
}

// OnUpdate returns the warnings for updating old to obj, both defaulted,
// obj prepared by its kind's strategy (its metadata.generation moved as the
// kind's rules say: spec changes, and a Deployment's annotations too) and
// validated. Workloads warn about their template when the generation moved,
// as upstream's WarningsOnUpdate do. Pods get none: upstream skips them, as
// their updates are frequent and mostly made by controllers.
func OnUpdate(obj, old runtime.Object) []string {
	switch o := obj.(type) {
	case *corev1.Service:
		// Every update, whatever changed, as upstream's strategy.
		return service(o)
	case *corev1.PodTemplate:
		if p, ok := old.(*corev1.PodTemplate); ok && !apiequality.Semantic.DeepEqual(o.Template, p.Template) {
			return podSpecAndMeta(field.NewPath("template"), &o.Template.Spec, &o.Template.ObjectMeta)
		}
	case *appsv1.Deployment:
		if p, ok := old.(*appsv1.Deployment); ok && o.Generation != p.Generation {
			return template(field.NewPath("spec", "template"), &o.Spec.Template)
		}
	case *appsv1.ReplicaSet:
		if p, ok := old.(*appsv1.ReplicaSet); ok && o.Generation != p.Generation {
			return template(field.NewPath("spec", "template"), &o.Spec.Template)
		}
	case *corev1.ReplicationController:
		// Upstream (v1.33) hands the old and the new template over in
		// the wrong order and so warns about the template replaced; the
		// new one's are given here, as for a ReplicaSet.
		if p, ok := old.(*corev1.ReplicationController); ok && o.Spec.Template != nil && o.Generation != p.Generation {
			return template(field.NewPath("spec", "template"), o.Spec.Template)
		}
	case *appsv1.StatefulSet:
		if p, ok := old.(*appsv1.StatefulSet); ok {
			return statefulSet(o, func(i int) *field.Path {
				return field.NewPath("spec", "volumeClaimTemplates").Index(i).Child("Spec")
			}, o.Generation != p.Generation)
		}
	case *appsv1.DaemonSet:
		// Upstream compares the template generation, which moves with
		// the template only.
		if p, ok := old.(*appsv1.DaemonSet); ok && !apiequality.Semantic.DeepEqual(o.Spec.Template, p.Spec.Template) {
			return template(field.NewPath("spec", "template"), &o.Spec.Template)
		}
	case *batchv1.Job:
		if p, ok := old.(*batchv1.Job); ok && o.Generation != p.Generation {
			return jobSpec(field.NewPath("spec"), &o.Spec)
		}
	case *batchv1.CronJob:
		p, ok := old.(*batchv1.CronJob)
		if !ok {
			return nil
		}
		var w []string
		if o.Generation != p.Generation {
			w = jobSpec(field.NewPath("spec", "jobTemplate", "spec"), &o.Spec.JobTemplate.Spec)
		}
		// A CronJob stored with TZ in its schedule may keep it; each
		// update reminds of timeZone. The path is upstream's, "spec"
		// twice included.
		if strings.Contains(o.Spec.Schedule, "TZ") {
			w = append(w, fmt.Sprintf("cannot use TZ or CRON_TZ in %s, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", field.NewPath("spec", "spec", "schedule")))
		}
		return w
	case *networkingv1.NetworkPolicy:
		if p, ok := old.(*networkingv1.NetworkPolicy); ok && o.Generation != p.Generation {
			return networkPolicyCIDRs(o)
		}
	}
	return nil
}

// workloadName warns about a controller's name that is not a DNS label:
// its pods are named, and their hostnames set, after it.
func workloadName(name string) []string {
	if msgs := dnsLabelProblems(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

func template(path *field.Path, t *corev1.PodTemplateSpec) []string {
	return podSpecAndMeta(path, &t.Spec, &t.ObjectMeta)
}

// statefulSet returns a StatefulSet's warnings; its pod template's only
// when withTemplate (on update, when the spec changed), its claim
// templates' and revision history limit's always.
func statefulSet(s *appsv1.StatefulSet, claimPath func(int) *field.Path, withTemplate bool) []string {
	var w []string
	if withTemplate {
		w = template(field.NewPath("spec", "template"), &s.Spec.Template)
	}
	for i := range s.Spec.VolumeClaimTemplates {
		w = append(w, claimSpec(claimPath(i), &s.Spec.VolumeClaimTemplates[i].Spec)...)
	}
	if s.Spec.RevisionHistoryLimit != nil && *s.Spec.RevisionHistoryLimit < 0 {
		w = append(w, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
	}
	return w
}

// Past these, an Indexed Job's controller may lose track of failed indexes.
const (
	indexedCompletionsSoftLimit = 100_000
	indexedParallelismSoftLimit = 10_000
)

func jobSpec(path *field.Path, spec *batchv1.JobSpec) []string {
	var w []string
	if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion &&
		deref(spec.Completions) > indexedCompletionsSoftLimit && deref(spec.Parallelism) > indexedParallelismSoftLimit {
		w = append(w, fmt.Sprintf("%s: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail", path))
	}
	return append(w, template(path.Child("template"), &spec.Template)...)
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// claimSpec warns about fractional byte sizes in a claim's storage request
// and limit: they are rounded.
func claimSpec(path *field.Path, spec *corev1.PersistentVolumeClaimSpec) []string {
	var w []string
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", spec.Resources.Requests}, {"limits", spec.Resources.Limits}} {
		if v, ok := part.list[corev1.ResourceStorage]; ok && v.MilliValue()%1000 != 0 {
			w = append(w, fractional(path.Child("resources").Child(part.name).Key(string(corev1.ResourceStorage)), v.String()))
		}
	}
	return w
}

func fractional(path *field.Path, value string) string {
	return fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path, value)
}
