package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// StoredForm converts between a resource's served kind and the kind its
// objects are stored as, for a resource that shares another's storage: an
// events.k8s.io/v1 Event is kept as the core/v1 Event it stands for, as in
// Kubernetes, so that one written through either API reads the same
// through the other (kubectl describe lists core Events; kube-scheduler
// and most controllers write events.k8s.io ones).
type StoredForm struct {
	// New returns an empty object of the stored kind.
	New func() runtime.Object
	// ToStored converts a served object to the stored kind.
	ToStored func(runtime.Object) (runtime.Object, error)
	// FromStored converts a stored object to the served kind.
	FromStored func(runtime.Object) (runtime.Object, error)
}

// eventsV1Stored keeps events.k8s.io/v1 Events as core/v1 Events.
var eventsV1Stored = &StoredForm{
	New: func() runtime.Object { return &corev1.Event{} },
	ToStored: func(obj runtime.Object) (runtime.Object, error) {
		e, ok := obj.(*eventsv1.Event)
		if !ok {
			return nil, fmt.Errorf("events.k8s.io/v1 Event expected, got %T", obj)
		}
		return EventToCore(e), nil
	},
	FromStored: func(obj runtime.Object) (runtime.Object, error) {
		e, ok := obj.(*corev1.Event)
		if !ok {
			return nil, fmt.Errorf("stored core/v1 Event expected, got %T", obj)
		}
		return EventFromCore(e), nil
	},
}

// EventToCore is Kubernetes' conversion of an events.k8s.io/v1 Event to the
// core/v1 Event it is stored as: the deprecated* fields are the core ones,
// regarding is involvedObject, note is message, reportingController is
// reportingComponent.
func EventToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	out.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Event"))
	if s := in.Series; s != nil {
		out.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

// EventFromCore is EventToCore's inverse.
func EventFromCore(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	out.SetGroupVersionKind(eventsv1.SchemeGroupVersion.WithKind("Event"))
	if s := in.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}
