package endpoints

import (
	stderrors "errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/registry"
	"github.com/skiffkube/skiff/storage"
)

// deleteOptions merges DeleteOptions from the body and the query.
func deleteOptions(req *request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	if err := decodeOptions(contentType(req.r.Header.Get("Content-Type")), body, opts); err != nil {
		return nil, err
	}
	if s := req.query("gracePeriodSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", s))
		}
		opts.GracePeriodSeconds = &n
	}
	if s := req.query("propagationPolicy"); s != "" {
		p := metav1.DeletionPropagation(s)
		opts.PropagationPolicy = &p
	}
	if s := req.query("orphanDependents"); s != "" {
		b := s == "true"
		opts.OrphanDependents = &b
	}
	return checkDeleteOptions(opts)
}

// checkDeleteOptions refuses what Kubernetes' DeleteOptions validation
// refuses (both orphanDependents and propagationPolicy, an unknown policy,
// a dry run other than All) and reads a negative grace period as one
// second. It serves DELETE and the options an Eviction carries.
func checkDeleteOptions(opts *metav1.DeleteOptions) (*metav1.DeleteOptions, error) {
	if opts.OrphanDependents != nil && opts.PropagationPolicy != nil {
		return nil, errors.NewInvalid(metaDeleteOptionsKind, "", invalidField("propagationPolicy", string(*opts.PropagationPolicy),
			"orphanDependents and deletionPropagation cannot be both set"))
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, errors.NewInvalid(metaDeleteOptionsKind, "", invalidField("propagationPolicy", string(*p), "must be Orphan, Background or Foreground"))
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		one := int64(1) // as Kubernetes: a negative grace period is one second, not zero
		opts.GracePeriodSeconds = &one
	}
	for _, v := range opts.DryRun {
		if v != "All" {
			return nil, errors.NewBadRequest(fmt.Sprintf("Invalid dry run value %q", v))
		}
	}
	return opts, nil
}

// delete serves DELETE of one object.
func (h *Handler) delete(req *request) error {
	opts, err := deleteOptions(req)
	if err != nil {
		return err
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	dry = dry || len(opts.DryRun) > 0
	warnDefaultPropagation(req, opts)
	obj, kept, err := h.deleteObject(req, req.info.Namespace, req.info.Name, opts, dry)
	if err != nil {
		return err
	}
	// Kubernetes answers 202 only to the deprecated orphanDependents=false
	// when the object stays for now; any other delete is 200, kept or gone.
	status := http.StatusOK
	if kept && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		status = http.StatusAccepted
	}
	return h.respond(req, status, obj)
}

// ImmortalNamespaces exist in every cluster and cannot be deleted, as
// Kubernetes' NamespaceLifecycle admission guarantees.
var ImmortalNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// deleteObject deletes one object, or starts its graceful deletion: pods on
// a node get a grace period, objects with finalizers (including the
// propagation finalizers orphan/foregroundDeletion) get a deletionTimestamp
// and stay until the finalizers are removed. kept says the object is still
// stored (with its deletionTimestamp) rather than gone.
func (h *Handler) deleteObject(req *request, ns, name string, opts *metav1.DeleteOptions, dry bool) (obj runtime.Object, kept bool, err error) {
	res := req.res
	if !res.Namespaced {
		ns = ""
	}
	key := res.Key(ns, name)
	if res.Group == "" && res.Name == "namespaces" && slices.Contains(ImmortalNamespaces, name) {
		return nil, false, errors.NewForbidden(res.GroupResource(), name, fmt.Errorf("this namespace may not be deleted"))
	}
	for attempt := 0; ; attempt++ {
		var kv *storage.KeyValue
		obj, kv, err = h.load(req, ns, name)
		if err != nil {
			return nil, false, err
		}
		m := accessor(obj)
		if err := checkDeletePreconditions(res, m, opts.Preconditions); err != nil {
			return nil, false, err
		}
		before, err := encodeStored(res, obj)
		if err != nil {
			return nil, false, errors.NewInternalError(err)
		}
		dt, left := m.GetDeletionTimestamp(), m.GetDeletionGracePeriodSeconds()
		if dt != nil && left != nil && *left > 0 {
			// A pod in its grace period: as Kubernetes' BeforeDelete, only a
			// shorter grace period given explicitly changes its deletion, counted
			// from when the deletion began (the deadline moves back by the
			// difference). Any other delete finds it pending and leaves it as it
			// is, propagation finalizers included: neither the pod's own period
			// nor its having finished meanwhile cuts the grace period short.
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *left {
				return obj, true, nil
			}
			grace := *opts.GracePeriodSeconds
			t := metav1.NewTime(dt.Add(time.Duration(grace-*left) * time.Second))
			m.SetDeletionTimestamp(&t)
			m.SetDeletionGracePeriodSeconds(&grace)
		}
		finalizers := m.GetFinalizers()
		if collectable(res) {
			finalizers = propagationFinalizers(res, finalizers, opts)
		}
		grace := ptr.Deref(m.GetDeletionGracePeriodSeconds(), 0)
		if dt == nil {
			grace = podGracePeriod(obj, opts)
		}
		holds := len(finalizers) > 0 || grace > 0 || namespaceSpecFinalizers(obj) > 0
		if holds {
			m.SetFinalizers(finalizers)
			if dt == nil {
				now := time.Now() // local, as decoding gives it (see wholeSecondsNow)
				t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
				m.SetDeletionTimestamp(&t)
				m.SetDeletionGracePeriodSeconds(&grace)
				// The object's controllers must stop acting on it: like a spec
				// change, the start of its deletion is a new generation.
				if g := m.GetGeneration(); g > 0 {
					m.SetGeneration(g + 1)
				}
			}
			if nsObj, ok := obj.(*corev1.Namespace); ok {
				nsObj.Status.Phase = corev1.NamespaceTerminating
			}
			after, err := encodeStored(res, obj)
			if err != nil {
				return nil, false, errors.NewInternalError(err)
			}
			if string(after) == string(before) || dry {
				return obj, true, nil
			}
			nkv, err := h.store.Update(req.ctx, key, after, kv.ModRevision, res.TTL)
			if err != nil {
				if stderrors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
					continue
				}
				return nil, false, storeError(err, res.GroupResource(), name)
			}
			m.SetResourceVersion(strconv.FormatInt(nkv.ModRevision, 10))
			return obj, true, nil
		}
		if dry {
			return obj, false, nil
		}
		_, rev, err := h.store.Delete(req.ctx, key, kv.ModRevision)
		if err != nil {
			if stderrors.Is(err, storage.ErrConflict) && attempt < maxUpdateRetries {
				continue
			}
			return nil, false, storeError(err, res.GroupResource(), name)
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if res.Lifecycle != nil {
			res.Lifecycle.AfterDelete(req.ctx, obj)
		}
		return obj, false, nil
	}
}

// checkDeletePreconditions refuses a delete whose UID or resourceVersion
// precondition the object does not meet: 409, in Kubernetes' words
// (rest.BeforeDelete's, which name the kind, not the resource).
func checkDeletePreconditions(res *registry.Resource, m metav1.Object, pc *metav1.Preconditions) error {
	if pc == nil {
		return nil
	}
	kind := schema.GroupResource{Group: res.Group, Resource: res.Kind}
	if pc.UID != nil && *pc.UID != m.GetUID() {
		return errors.NewConflict(kind, m.GetName(), fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pc.UID, m.GetUID()))
	}
	if pc.ResourceVersion != nil && *pc.ResourceVersion != m.GetResourceVersion() {
		return errors.NewConflict(kind, m.GetName(), fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pc.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// orphansByDefault says whether deletes of the resource that name no
// policy orphan its dependents, as Kubernetes' DefaultGarbageCollectionPolicy
// keeps for the versions that did so before server-side cascading: v1
// ReplicationControllers and batch/v1 Jobs. Every other kind skiff serves
// deletes its dependents in the background by default.
func orphansByDefault(res *registry.Resource) bool {
	return res.Group == "" && res.Name == "replicationcontrollers" || res.Group == "batch" && res.Name == "jobs"
}

// jobDeleteWarning is the warning of a Job delete left to the default
// propagation, which orphans the Job's pods (Kubernetes' Job storage).
const jobDeleteWarning = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"

// warnDefaultPropagation warns a Job delete (one or a collection) that
// names no propagation policy that the pods stay, as Kubernetes does.
func warnDefaultPropagation(req *request, opts *metav1.DeleteOptions) {
	if opts.PropagationPolicy == nil && opts.OrphanDependents == nil && req.res.Group == "batch" && req.res.Name == "jobs" {
		req.warnings = append(req.warnings, jobDeleteWarning)
	}
}

// propagationFinalizers sets the finalizer that records the propagation
// policy for the garbage collector, as Kubernetes' deletion does: the
// request's policy (orphanDependents, else propagationPolicy) replaces the one
// an earlier delete or the object's creator chose; without one the object
// keeps its own, and without that the kind's default applies (orphan for
// the kinds orphansByDefault names). Background needs no finalizer.
func propagationFinalizers(res *registry.Resource, fins []string, opts *metav1.DeleteOptions) []string {
	orphan, foreground := false, false
	switch {
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	case slices.Contains(fins, metav1.FinalizerOrphanDependents):
		orphan = true
	case slices.Contains(fins, metav1.FinalizerDeleteDependents):
		foreground = true
	default:
		orphan = orphansByDefault(res)
	}
	out := make([]string, 0, len(fins)+1)
	for _, f := range fins {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if len(out) == len(fins) && slices.Equal(slices.Sorted(slices.Values(out)), slices.Sorted(slices.Values(fins))) {
		return fins // unchanged: keep the stored order
	}
	return out
}

// collectable says whether deletes of the resource take a propagation
// policy. Events have no dependents: Kubernetes' event strategy declares
// garbage collection unsupported, so no finalizer holds them.
func collectable(res *registry.Resource) bool {
	return !(res.Name == "events" && (res.Group == "" || res.Group == "events.k8s.io"))
}

// podGracePeriod is the grace period of a pod deletion: 0 for pods not
// bound to a node or already finished, else the request's or the pod's.
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// deleteCollection serves DELETE of a collection: every selected object is
// deleted as by delete; the reply lists them.
func (h *Handler) deleteCollection(req *request) error {
	opts, err := deleteOptions(req)
	if err != nil {
		return err
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	dry = dry || len(opts.DryRun) > 0
	warnDefaultPropagation(req, opts)
	sel, err := parseSelection(req)
	if err != nil {
		return err
	}
	got, err := h.collect(req, listPrefix(req.res, req.info.Namespace, sel), sel, 0, false, "", 0)
	if err != nil {
		return storeError(err, req.res.GroupResource(), "")
	}
	var deleted []runtime.Object
	for _, it := range got.items {
		m := accessor(it)
		obj, _, err := h.deleteObject(req, m.GetNamespace(), m.GetName(), opts, dry)
		if err != nil {
			if errors.IsNotFound(err) {
				continue
			}
			return err
		}
		deleted = append(deleted, obj)
	}
	list := newList(req.res)
	if err := meta.SetList(list, deleted); err != nil {
		return errors.NewInternalError(err)
	}
	return h.respond(req, http.StatusOK, list)
}
