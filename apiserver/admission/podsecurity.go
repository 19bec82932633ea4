package admission

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// The Pod Security Standards checks, from Kubernetes' own library.
var (
	evaluatorOnce sync.Once
	evaluator     policy.Evaluator
	evaluatorErr  error
)

func podSecurityEvaluator() (policy.Evaluator, error) {
	evaluatorOnce.Do(func() { evaluator, evaluatorErr = policy.NewEvaluator(policy.DefaultChecks(), nil) })
	return evaluator, evaluatorErr
}

// podSecurity applies the namespace's pod-security.kubernetes.io labels:
// a pod that breaks the enforce level is refused, one that breaks the warn
// level is admitted with a warning. Workload objects (their pod templates)
// are only warned about, for either level, as in Kubernetes.
func (c *Chain) podSecurity(ctx context.Context, a *Attributes) ([]string, error) {
	meta, spec := podTemplate(a)
	if spec == nil {
		return nil, nil
	}
	ns, _, found, err := getInto[corev1.Namespace](ctx, c.store, "/registry/namespaces/"+a.Namespace)
	if err != nil || !found {
		return nil, err // a missing namespace is refused before admission
	}
	pol, errs := psaapi.PolicyToEvaluate(ns.Labels, psaapi.Policy{
		Enforce: psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
		Warn:    psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
		Audit:   psaapi.LevelVersion{Level: psaapi.LevelPrivileged, Version: psaapi.LatestVersion()},
	})
	// Invalid labels (errs) come back as restricted:latest, which is what
	// Kubernetes evaluates them as.
	_ = errs
	ev, err := podSecurityEvaluator()
	if err != nil {
		return nil, fmt.Errorf("pod security checks: %w", err)
	}
	_, isPod := a.Object.(*corev1.Pod)
	var warnings []string
	check := func(lv psaapi.LevelVersion) *policy.AggregateCheckResult {
		if lv.Level == psaapi.LevelPrivileged {
			return nil
		}
		res := policy.AggregateCheckResults(ev.EvaluatePod(lv, meta, spec))
		if res.Allowed {
			return nil
		}
		return &res
	}
	if res := check(pol.Enforce); res != nil {
		if isPod {
			return nil, forbidden(a, "violates PodSecurity %q: %s", pol.Enforce.String(), res.ForbiddenDetail())
		}
		warnings = append(warnings, fmt.Sprintf("would violate PodSecurity %q: %s", pol.Enforce.String(), res.ForbiddenDetail()))
	}
	if !pol.Warn.Equivalent(&pol.Enforce) {
		if res := check(pol.Warn); res != nil {
			warnings = append(warnings, fmt.Sprintf("would violate PodSecurity %q: %s", pol.Warn.String(), res.ForbiddenDetail()))
		}
	}
	return warnings, nil
}

// podTemplate returns the pod metadata and spec an object creates pods from.
func podTemplate(a *Attributes) (*metav1.ObjectMeta, *corev1.PodSpec) {
	switch o := a.Object.(type) {
	case *corev1.Pod:
		return &o.ObjectMeta, &o.Spec
	case *appsv1.Deployment:
		return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.ObjectMeta, &o.Spec.JobTemplate.Spec.Template.Spec
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			return &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
		}
	case *corev1.PodTemplate:
		return &o.Template.ObjectMeta, &o.Template.Spec
	}
	return nil, nil
}
