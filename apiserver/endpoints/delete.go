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
		if pc := opts.Preconditions; pc != nil {
			if pc.UID != nil && *pc.UID != m.GetUID() {
				return nil, false, errors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pc.UID, m.GetUID()))
			}
			if pc.ResourceVersion != nil && *pc.ResourceVersion != m.GetResourceVersion() {
				return nil, false, errors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pc.ResourceVersion, m.GetResourceVersion()))
			}
		}
		before, err := encodeStored(res, obj)
		if err != nil {
			return nil, false, errors.NewInternalError(err)
		}
		finalizers := m.GetFinalizers()
		if collectable(res) {
			finalizers = propagationFinalizers(finalizers, opts)
		}
		grace := podGracePeriod(obj, opts)
		holds := len(finalizers) > 0 || grace > 0 || namespaceSpecFinalizers(obj) > 0
		if holds {
			m.SetFinalizers(finalizers)
			now := time.Now() // local, as decoding gives it (see wholeSecondsNow)
			if dt := m.GetDeletionTimestamp(); dt == nil {
				t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
				m.SetDeletionTimestamp(&t)
				m.SetDeletionGracePeriodSeconds(&grace)
				// The object's controllers must stop acting on it: like a spec
				// change, the start of its deletion is a new generation.
				if g := m.GetGeneration(); g > 0 {
					m.SetGeneration(g + 1)
				}
			} else if cur := m.GetDeletionGracePeriodSeconds(); cur != nil && grace < *cur {
				// A shorter grace period counts from when the deletion began, as
				// in Kubernetes: the deadline moves back by the difference.
				t := metav1.NewTime(dt.Add(time.Duration(grace-*cur) * time.Second))
				m.SetDeletionTimestamp(&t)
				m.SetDeletionGracePeriodSeconds(&grace)
			}
			if nsObj, ok := obj.(*corev1.Namespace); ok {
				nsObj.Status.Phase = corev1.NamespaceTerminating
			}
			if grace == 0 && len(finalizers) == 0 && namespaceSpecFinalizers(obj) == 0 {
				holds = false // a pod whose grace period ran out: delete now
			}
		}
		if holds {
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

// propagationFinalizers sets the finalizer that records the propagation
// policy for the garbage collector, as Kubernetes' deletion does: the
// request's policy (orphanDependents, else propagationPolicy) replaces the one
// an earlier delete or the object's creator chose; without one the object
// keeps its own. Background, the default, needs no finalizer.
func propagationFinalizers(fins []string, opts *metav1.DeleteOptions) []string {
	orphan, foreground := false, false
	switch {
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	default:
		orphan = slices.Contains(fins, metav1.FinalizerOrphanDependents)
		foreground = !orphan && slices.Contains(fins, metav1.FinalizerDeleteDependents)
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
