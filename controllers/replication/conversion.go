package replication

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/replicaset"
)

// toReplicaSet is the ReplicaSet a ReplicationController stands for: the same metadata, its
// selector map as matchLabels, its template (empty when absent: the API requires one) and status.
// The result shares nothing with rc.
func toReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rc = rc.DeepCopy()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Selector != nil {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// toReplicationController is toReplicaSet's inverse. A selector with match expressions, which no
// ReplicationController converts to, is an error.
func toReplicationController(rs *appsv1.ReplicaSet) (*corev1.ReplicationController, error) {
	rs = rs.DeepCopy()
	if rs.Spec.Selector != nil && len(rs.Spec.Selector.MatchExpressions) > 0 {
		return nil, fmt.Errorf("replicationcontroller %s/%s: a selector with match expressions has no ReplicationController form", rs.Namespace, rs.Name)
	}
	rc := &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        &rs.Spec.Template,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc, nil
}

func toReplicaSets(rcs []*corev1.ReplicationController) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, len(rcs))
	for i, rc := range rcs {
		out[i] = toReplicaSet(rc)
	}
	return out
}

// convertEvent turns what an informer delivers about a ReplicationController, the object or a
// tombstone holding it, into the same about its ReplicaSet.
func convertEvent(obj any) any {
	switch o := obj.(type) {
	case *corev1.ReplicationController:
		return toReplicaSet(o)
	case cache.DeletedFinalStateUnknown:
		if rc, ok := o.Obj.(*corev1.ReplicationController); ok {
			return cache.DeletedFinalStateUnknown{Key: o.Key, Obj: toReplicaSet(rc)}
		}
	}
	return obj
}

// informer is a ReplicationController informer seen as a ReplicaSet informer: its lister and the
// handlers added to it get ReplicaSets.
type informer struct {
	rc coreinformers.ReplicationControllerInformer
}

var _ appsinformers.ReplicaSetInformer = informer{}

func (i informer) Informer() cache.SharedIndexInformer  { return sharedInformer{i.rc.Informer()} }
func (i informer) Lister() appslisters.ReplicaSetLister { return lister{i.rc.Lister()} }

// sharedInformer converts the objects its event handlers receive. Its store and indexer still
// hold ReplicationControllers: the ReplicaSet controller reads through the lister only.
type sharedInformer struct{ cache.SharedIndexInformer }

func (s sharedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return s.SharedIndexInformer.AddEventHandler(handler{h})
}

func (s sharedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return s.SharedIndexInformer.AddEventHandlerWithResyncPeriod(handler{h}, resync)
}

func (s sharedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return s.SharedIndexInformer.AddEventHandlerWithOptions(handler{h}, opts)
}

type handler struct{ h cache.ResourceEventHandler }

func (h handler) OnAdd(obj any, initial bool) { h.h.OnAdd(convertEvent(obj), initial) }
func (h handler) OnUpdate(old, cur any)       { h.h.OnUpdate(convertEvent(old), convertEvent(cur)) }
func (h handler) OnDelete(obj any)            { h.h.OnDelete(convertEvent(obj)) }

// lister reads ReplicationControllers from the cache as ReplicaSets.
type lister struct {
	rc corelisters.ReplicationControllerLister
}

func (l lister) List(sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.List(sel)
	return toReplicaSets(rcs), err
}

func (l lister) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	return namespaceLister{l.rc.ReplicationControllers(namespace)}
}

func (l lister) GetPodReplicaSets(pod *corev1.Pod) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.GetPodControllers(pod)
	return toReplicaSets(rcs), err
}

type namespaceLister struct {
	rc corelisters.ReplicationControllerNamespaceLister
}

func (l namespaceLister) List(sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.List(sel)
	return toReplicaSets(rcs), err
}

func (l namespaceLister) Get(name string) (*appsv1.ReplicaSet, error) {
	rc, err := l.rc.Get(name)
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

// rcClient reads and writes ReplicationControllers for the ReplicaSet controller.
type rcClient struct {
	rc corev1client.ReplicationControllerInterface
}

var _ replicaset.Client = rcClient{}

func (c rcClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ReplicaSet, error) {
	rc, err := c.rc.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

func (c rcClient) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	rc, err := toReplicationController(rs)
	if err != nil {
		return nil, err
	}
	rc, err = c.rc.UpdateStatus(ctx, rc, opts)
	if err != nil {
		return nil, err
	}
	return toReplicaSet(rc), nil
}

// recorder records the ReplicaSet controller's events on the ReplicationControllers its
// ReplicaSets stand for, so that they name kind ReplicationController, as Kubernetes' do.
type recorder struct{ record.EventRecorder }

// subject is the object an event is about: a ReplicaSet's ReplicationController, or obj as it is.
func subject(obj runtime.Object) runtime.Object {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		if rc, err := toReplicationController(rs); err == nil {
			return rc
		}
	}
	return obj
}

func (r recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.EventRecorder.Event(subject(obj), eventtype, reason, message)
}

func (r recorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.EventRecorder.Eventf(subject(obj), eventtype, reason, messageFmt, args...)
}

func (r recorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.EventRecorder.AnnotatedEventf(subject(obj), annotations, eventtype, reason, messageFmt, args...)
}
