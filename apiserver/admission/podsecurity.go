package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psadmission "k8s.io/pod-security-admission/admission"
	psadmissionapi "k8s.io/pod-security-admission/admission/api"
	"k8s.io/pod-security-admission/admission/api/load"
	psaapi "k8s.io/pod-security-admission/api"
	psametrics "k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"
)

// Pod Security Admission is Kubernetes' own (k8s.io/pod-security-admission's
// Admission) over the store: the namespace's pod-security.kubernetes.io
// labels decide, with the default configuration (everything privileged
// where a namespace sets nothing, no exemptions).
//
//   - pods: refused when they break the enforce level, warned about for the
//     warn level; updates are checked only when an image changes.
//   - workloads with a pod template: warned about for the warn level.
//   - namespaces: labels with an unknown level or a bad version are 422
//     Invalid; raising the enforce level answers with warnings naming the
//     existing pods that would break it.
var (
	psaOnce sync.Once
	psaDeps struct {
		config    *psadmissionapi.PodSecurityConfiguration
		evaluator policy.Evaluator
		err       error
	}
)

// newPodSecurity builds the library's Admission with store-backed getters.
// The configuration and checks are built once per process (they are
// immutable); each Chain gets its own Admission around its store.
func newPodSecurity(store Store, decoded *decodedCache) (*psadmission.Admission, error) {
	psaOnce.Do(func() {
		cfg, err := load.LoadFromData(nil)
		if err != nil {
			psaDeps.err = fmt.Errorf("pod security configuration: %w", err)
			return
		}
		ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
		if err != nil {
			psaDeps.err = fmt.Errorf("pod security checks: %w", err)
			return
		}
		psaDeps.config = cfg
		psaDeps.evaluator = ev
	})
	if psaDeps.err != nil {
		return nil, psaDeps.err
	}
	a := &psadmission.Admission{
		Configuration:   psaDeps.config,
		Evaluator:       psaDeps.evaluator,
		Metrics:         noMetrics{},
		NamespaceGetter: storeNamespaces{store, decoded},
		PodLister:       storeNamespaces{store, decoded},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, err
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, err
	}
	return a, nil
}

var (
	namespacesResource = schema.GroupResource{Resource: "namespaces"}
	podSpecExtractor   psadmission.DefaultPodSpecExtractor
)

// podSecurity runs Pod Security Admission for a create (old == nil) or an
// update of a namespace, a pod or a workload with a pod template.
func (c *Chain) podSecurity(ctx context.Context, a *Attributes, old runtime.Object) ([]string, error) {
	if a.Resource != namespacesResource && a.Resource != podsResource && !podSpecExtractor.HasPodSpec(a.Resource) {
		return nil, nil
	}
	if c.psaErr != nil {
		return nil, apierrors.NewInternalError(c.psaErr)
	}
	op := admissionv1.Create
	if old != nil {
		op = admissionv1.Update
	}
	gvk := a.Object.GetObjectKind().GroupVersionKind()
	if a.Resource == namespacesResource {
		gvk = corev1.SchemeGroupVersion.WithKind("Namespace") // named in the 422 for bad labels
	}
	ns := a.Namespace
	if a.Resource == namespacesResource {
		ns = a.Name // as Kubernetes fills a namespace's own attributes
	}
	resp := c.psa.Validate(ctx, &psaapi.AttributesRecord{
		Name: a.Name, Namespace: ns, Kind: gvk, Resource: a.Resource.WithVersion(""),
		Subresource: a.Subresource, Operation: op, Object: a.Object, OldObject: old,
	})
	if !resp.Allowed {
		if resp.Result == nil {
			return nil, forbidden(a, "denied by PodSecurity")
		}
		return nil, &apierrors.StatusError{ErrStatus: *resp.Result}
	}
	return resp.Warnings, nil
}

// storeNamespaces reads namespaces and pods for the library from the store.
type storeNamespaces struct {
	store   Store
	decoded *decodedCache
}

func (s storeNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, found, err := getCachedInto[corev1.Namespace](ctx, s.store, s.decoded, "/registry/namespaces/"+name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(namespacesResource, name)
	}
	return ns, nil
}

// ListPods reads the namespace's pods from the list cache, as the library's
// informer-backed lister would.
func (s storeNamespaces) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	if namespace == "" || strings.Contains(namespace, "/") {
		return nil, errors.New("listing pods: no namespace")
	}
	pods, _, err := listInto[corev1.Pod](ctx, s.store, "/registry/pods/"+namespace+"/", false)
	return pods, err
}

// noMetrics drops the library's evaluation counts; skiff's request metrics
// already count the requests.
type noMetrics struct{}

func (noMetrics) RecordEvaluation(psametrics.Decision, psaapi.LevelVersion, psametrics.Mode, psaapi.Attributes) {
}
func (noMetrics) RecordExemption(psaapi.Attributes)       {}
func (noMetrics) RecordError(_ bool, _ psaapi.Attributes) {}
