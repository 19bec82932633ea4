package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/storage"
)

// Retries of a missing "default" ServiceAccount, as Kubernetes' ServiceAccount
// admission plugin: the service account controller creates it moments after
// its namespace, so the first pods of a new namespace wait up to about a
// second or two for it rather than fail.
const (
	defaultSALookups       = 10
	defaultSARetryInterval = 100 * time.Millisecond
)

// serviceAccount defaults a pod's service account to "default" and refuses
// one that does not exist, with Kubernetes' message: `pods "x" is forbidden:
// error looking up service account ns/sa: serviceaccount "sa" not found`.
// A pod without imagePullSecrets gets its account's, as Kubernetes'
// ServiceAccount admission plugin copies them, and unless the pod or its
// account opts out, every container mounts the account's token (the
// kube-api-access projected volume).
func (c *Chain) serviceAccount(ctx context.Context, a *Attributes) error {
	pod := a.Object.(*corev1.Pod)
	name := pod.Spec.ServiceAccountName
	if name == "" {
		name = pod.Spec.DeprecatedServiceAccount
	}
	if name == "" {
		name = "default"
	}
	pod.Spec.ServiceAccountName = name
	pod.Spec.DeprecatedServiceAccount = name
	lookups := 1
	if name == "default" {
		lookups = defaultSALookups
	}
	// A random 100–200ms between lookups, so that many pods waiting for
	// one namespace's account do not look in step.
	interval := defaultSARetryInterval + time.Duration(rand.Int64N(int64(defaultSARetryInterval)))
	for i := 0; i < lookups; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return apierrors.NewTimeoutError(fmt.Sprintf("waiting for service account %s/%s", a.Namespace, name), 1)
			case <-time.After(interval):
			}
		}
		sa, found, err := getCachedInto[corev1.ServiceAccount](ctx, c.store, &c.decoded, "/registry/serviceaccounts/"+a.Namespace+"/"+name)
		if err != nil {
			return err
		}
		if found {
			if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
				pod.Spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), sa.ImagePullSecrets...)
			}
			if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror && shouldAutomount(sa, pod) {
				mountServiceAccountToken(pod)
			}
			return nil
		}
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
	return forbidden(a, "error looking up service account %s/%s: %w", a.Namespace, name, notFound)
}

// priorityClassPrefix is where PriorityClasses are stored.
const priorityClassPrefix = "/registry/scheduling.k8s.io/priorityclasses/"

// priority resolves spec.priorityClassName (or the global default class)
// into spec.priority and spec.preemptionPolicy, as Kubernetes' Priority
// admission plugin does.
func (c *Chain) priority(ctx context.Context, a *Attributes) error {
	pod := a.Object.(*corev1.Pod)
	var class *schedulingv1.PriorityClass
	if pod.Spec.PriorityClassName == "" {
		// Listed from the store's cache; each class is decoded only once
		// it is written (decodeCached).
		l, err := c.store.List(ctx, storage.ListOptions{Prefix: priorityClassPrefix, AnyRevision: true})
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		for _, kv := range l.KVs {
			pc, err := decodeCached[schedulingv1.PriorityClass](&c.decoded, kv)
			if err != nil {
				return err
			}
			// Several global defaults: Kubernetes takes the lowest value.
			if pc.GlobalDefault && (class == nil || pc.Value < class.Value) {
				class = pc
			}
		}
		if class != nil {
			pod.Spec.PriorityClassName = class.Name
		}
	} else {
		pc, found, err := getCachedInto[schedulingv1.PriorityClass](ctx, c.store, &c.decoded, priorityClassPrefix+pod.Spec.PriorityClassName)
		if err != nil {
			return err
		}
		if !found {
			return forbidden(a, "no PriorityClass with name %s was found", pod.Spec.PriorityClassName)
		}
		class = pc
	}
	value := int32(0)
	if class != nil {
		value = class.Value
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbidden(a, "the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value)
	}
	pod.Spec.Priority = &value
	if pod.Spec.PreemptionPolicy == nil {
		policy := corev1.PreemptLowerPriority
		if class != nil && class.PreemptionPolicy != nil {
			policy = *class.PreemptionPolicy
		}
		pod.Spec.PreemptionPolicy = &policy
	}
	return nil
}
