package endpoints

import (
	stderrors "errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/storage"
)

// Messages of Kubernetes' eviction REST, which kubectl drain shows and retries on.
const (
	msgViolatesBudget = "Cannot evict pod as it would violate the pod's disruption budget."
	msgManyBudgets    = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
	// The DisruptionTarget condition an evicted pod gets, as Kubernetes words it.
	reasonEvictionByAPI = "EvictionByEvictionAPI"
	msgEvictionByAPI    = "Eviction API: evicting"
	// maxDisruptedPods bounds status.disruptedPods, as Kubernetes does.
	maxDisruptedPods = 2000
)

var pdbGVR = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}

// serveEviction serves POST pods/<name>/eviction: it deletes the pod unless that would take the
// pods of its PodDisruptionBudget below the budget (429, retried by kubectl drain). An allowed
// eviction first spends one disruption from the budget's status (recording the pod in
// status.disruptedPods, so the disruption controller does not hand it out again before the pod is
// gone), then deletes the pod with the eviction's options. A pod that may go without spending
// (Pending, or not Ready under a healthy budget) is deleted only at the resourceVersion it was
// judged at, as Kubernetes does: a Pending pod that changed is judged again, an unready one
// gets the 429 that kubectl drain retries.
func (h *Handler) serveEviction(req *request) error {
	if !req.res.Subresources.Eviction || req.info.Verb != "create" {
		return errors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/eviction"}, req.info.Verb)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	ev := &policyv1.Eviction{}
	if err := decodeOptions(contentType(req.r.Header.Get("Content-Type")), body, ev); err != nil {
		return err
	}
	// As Kubernetes: the Eviction names its pod, the URL's (client-go and
	// kubectl drain always set it).
	if ev.Name != req.info.Name {
		return errors.NewBadRequest(fmt.Sprintf("name in URL does not match name in Eviction object: %q != %q", req.info.Name, ev.Name))
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	// A dry run asked for both in the query and in the body must be the
	// same one; Kubernetes refuses the two disagreeing (with a 500 — bad
	// input here, so 400).
	if q := req.r.URL.Query()["dryRun"]; len(q) > 0 && len(opts.DryRun) > 0 && !slices.Equal(q, opts.DryRun) {
		return errors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", q, opts.DryRun))
	}
	if opts, err = checkDeleteOptions(opts); err != nil {
		return err
	}
	dry = dry || len(opts.DryRun) > 0
	callerPinned := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	for attempt := 0; ; attempt++ {
		v, err := h.spendDisruption(req, dry)
		if err != nil {
			return err
		}
		pod := v.pod
		delOpts := opts
		if v.cost != spent && !callerPinned {
			// The pod goes without spending from a budget only as it was
			// judged: had it become Running or Ready since, it would have to.
			delOpts = opts.DeepCopy()
			if delOpts.Preconditions == nil {
				delOpts.Preconditions = &metav1.Preconditions{}
			}
			delOpts.Preconditions.ResourceVersion = &pod.ResourceVersion
		}
		if !dry {
			delOpts, err = h.markEvicted(req, delOpts, pod, v.kv)
		}
		if err == nil {
			_, _, err = h.deleteObject(req, req.info.Namespace, req.info.Name, delOpts, dry)
		}
		if errors.IsConflict(err) && !callerPinned {
			switch {
			case v.cost == notRunning && attempt < maxUpdateRetries:
				continue // judge the pod again, as it is now
			case v.cost == unhealthy:
				return stillProcessing(v.budget)
			}
		}
		if err != nil {
			return err
		}
		writeObject(req.w, http.StatusCreated, statusSuccess(http.StatusCreated), req.warnings)
		return nil
	}
}

// evictionCost says why an eviction may delete its pod.
type evictionCost int

const (
	spent      evictionCost = iota // a disruption was taken from the budget, or no budget covers the pod
	notRunning                     // a Pending pod: it costs no availability
	unhealthy                      // a pod that is not Ready, which its budget lets go
)

// verdict is what spendDisruption found: the pod as it last read it, and on
// what terms it may go (budget names the PodDisruptionBudget, if one covers it).
type verdict struct {
	pod    *corev1.Pod
	kv     *storage.KeyValue
	cost   evictionCost
	budget string
}

// markEvicted gives the pod the DisruptionTarget condition before it is deleted, as Kubernetes'
// eviction does, so its owner tells an eviction from a failure (a Job's podFailurePolicy) and
// kubectl describe says why it went. The delete options come back with a resourceVersion
// precondition moved to the version this write made. pod and kv, if not nil, are the pod as the
// budget check read it: the first attempt starts from them instead of reading the pod again.
func (h *Handler) markEvicted(req *request, opts *metav1.DeleteOptions, pod *corev1.Pod, kv *storage.KeyValue) (*metav1.DeleteOptions, error) {
	handed := pod != nil
	for attempt := 0; ; attempt++ {
		if attempt > 0 || !handed {
			var err error
			if pod, kv, err = h.loadPod(req); err != nil {
				return nil, err
			}
		}
		if pc := opts.Preconditions; pc != nil {
			var failed error
			if pc.UID != nil && *pc.UID != pod.UID {
				failed = fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pc.UID, pod.UID)
			} else if pc.ResourceVersion != nil && *pc.ResourceVersion != pod.ResourceVersion {
				failed = fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pc.ResourceVersion, pod.ResourceVersion)
			}
			if failed != nil && attempt == 0 && handed {
				continue // the handed pod may be older than the caller's: judge the current one
			}
			if failed != nil {
				return nil, errors.NewConflict(req.res.GroupResource(), pod.Name, failed)
			}
		}
		if !setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reasonEvictionByAPI, Message: msgEvictionByAPI}) {
			return opts, nil
		}
		value, err := encodeStored(req.res, pod)
		if err != nil {
			return nil, errors.NewInternalError(err)
		}
		nkv, err := h.store.Update(req.ctx, kv.Key, value, kv.ModRevision, req.res.TTL)
		if stderrors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
			continue
		}
		if err != nil {
			return nil, storeError(err, req.res.GroupResource(), pod.Name)
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			opts = opts.DeepCopy()
			rv := strconv.FormatInt(nkv.ModRevision, 10)
			opts.Preconditions.ResourceVersion = &rv
		}
		return opts, nil
	}
}

// setPodCondition sets c on the status, its transition time moving only when its status does,
// and reports whether anything changed.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) bool {
	now := wholeSecondsNow()
	for i := range st.Conditions {
		cur := &st.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
			return false
		}
		if cur.Status != c.Status {
			cur.LastTransitionTime = now
		}
		cur.Status, cur.Reason, cur.Message = c.Status, c.Reason, c.Message
		return true
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
	return true
}

// loadPod reads the pod being evicted.
func (h *Handler) loadPod(req *request) (*corev1.Pod, *storage.KeyValue, error) {
	obj, kv, err := h.load(req, req.info.Namespace, req.info.Name)
	if err != nil {
		return nil, nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, errors.NewInternalError(fmt.Errorf("pods/eviction on %T", obj))
	}
	return pod, kv, nil
}

// spendDisruption checks the pod's budget and takes one disruption from it; a nil error means
// the pod may go, and the cost says on what terms. It returns the pod as it last read it.
func (h *Handler) spendDisruption(req *request, dry bool) (verdict, error) {
	for attempt := 0; ; attempt++ {
		pod, podKV, err := h.loadPod(req)
		if err != nil {
			return verdict{}, err
		}
		// Pods that have finished or are already going cost no availability.
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return verdict{pod: pod, kv: podKV, cost: spent}, nil
		}
		if pod.Status.Phase == corev1.PodPending {
			return verdict{pod: pod, kv: podKV, cost: notRunning}, nil
		}
		pdbRes, ok := h.reg.Get(pdbGVR)
		if !ok {
			return verdict{pod: pod, kv: podKV, cost: spent}, nil // no budgets served, nothing to honour
		}
		page, err := h.store.List(req.ctx, storage.ListOptions{Prefix: pdbRes.KeyPrefix() + pod.Namespace + "/"})
		if err != nil {
			return verdict{}, storeError(err, pdbRes.GroupResource(), "")
		}
		var pdb *policyv1.PodDisruptionBudget
		var pdbKV *storage.KeyValue
		for _, kv := range page.KVs {
			o, err := decodeKV(pdbRes, kv)
			if err != nil {
				return verdict{}, errors.NewInternalError(err)
			}
			b, ok := o.(*policyv1.PodDisruptionBudget)
			if !ok || b.Spec.Selector == nil {
				continue // a nil selector selects nothing
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if pdb != nil {
				// Kubernetes answers a bare 500 with this message, no InternalError reason.
				return verdict{}, &errors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
					Code: http.StatusInternalServerError, Message: msgManyBudgets}}
			}
			pdb, pdbKV = b, kv
		}
		if pdb == nil {
			return verdict{pod: pod, kv: podKV, cost: spent}, nil
		}
		if !podReady(pod) {
			// An unhealthy pod may go when the budget allows it (AlwaysAllow) or the application
			// is not disrupted anyway (IfHealthyBudget, the default). A budget that wants no pod
			// healthy (not computed yet, failed, or over no pods) proves nothing.
			p := pdb.Spec.UnhealthyPodEvictionPolicy
			if (p != nil && *p == policyv1.AlwaysAllow) ||
				(pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0) {
				return verdict{pod: pod, kv: podKV, cost: unhealthy, budget: pdb.Name}, nil
			}
		}
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return verdict{}, stillProcessing(pdb.Name)
		}
		budgetGR := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}
		if pdb.Status.DisruptionsAllowed < 0 {
			return verdict{}, errors.NewForbidden(budgetGR, pdb.Name, stderrors.New("pdb disruptions allowed is negative"))
		}
		if len(pdb.Status.DisruptedPods) > maxDisruptedPods {
			return verdict{}, errors.NewForbidden(budgetGR, pdb.Name, stderrors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
		}
		if pdb.Status.DisruptionsAllowed == 0 {
			return verdict{}, tooManyRequests(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
				pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy), 0)
		}
		if dry {
			return verdict{pod: pod, kv: podKV, cost: spent}, nil
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[pod.Name] = wholeSecondsNow()
		if pdb.Status.DisruptionsAllowed == 0 {
			setDisruptionAllowed(pdb, metav1.ConditionFalse, policyv1.InsufficientPodsReason)
		}
		value, err := encodeStored(pdbRes, pdb)
		if err != nil {
			return verdict{}, errors.NewInternalError(err)
		}
		if _, err := h.store.Update(req.ctx, pdbKV.Key, value, pdbKV.ModRevision, pdbRes.TTL); err != nil {
			if stderrors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
				continue // another eviction spent from the same budget: look again
			}
			if stderrors.Is(err, storage.ErrConflict) {
				return verdict{}, tooManyRequests("The disruption budget "+pdb.Name+" is being updated concurrently; try again", 1)
			}
			return verdict{}, storeError(err, pdbRes.GroupResource(), pdb.Name)
		}
		return verdict{pod: pod, kv: podKV, cost: spent}, nil
	}
}

// tooManyRequests is the 429 kubectl drain waits on, with the budget's reason as a cause.
func tooManyRequests(cause string, retryAfterSeconds int) error {
	err := errors.NewTooManyRequests(msgViolatesBudget, retryAfterSeconds)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

// stillProcessing is Kubernetes' 429 for a budget whose status is behind its
// spec, and for an unhealthy pod that changed while it was being evicted.
func stillProcessing(name string) error {
	return tooManyRequests(fmt.Sprintf("The disruption budget %s is still being processed by the server.", name), 10)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func setDisruptionAllowed(pdb *policyv1.PodDisruptionBudget, status metav1.ConditionStatus, reason string) {
	for i := range pdb.Status.Conditions {
		c := &pdb.Status.Conditions[i]
		if c.Type == policyv1.DisruptionAllowedCondition {
			if c.Status != status {
				c.LastTransitionTime = wholeSecondsNow()
			}
			c.Status, c.Reason, c.ObservedGeneration = status, reason, pdb.Status.ObservedGeneration
			return
		}
	}
	pdb.Status.Conditions = append(pdb.Status.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason,
		ObservedGeneration: pdb.Status.ObservedGeneration, LastTransitionTime: wholeSecondsNow(),
	})
}
