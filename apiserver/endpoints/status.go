package endpoints

import (
	"context"
	stderrors "errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/storage"
)

// unsupportedMedia is the 415 Kubernetes sends for a Content-Type it cannot read.
func unsupportedMedia(media string) error {
	return &errors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got %q)", media),
	}}
}

// notAcceptable is the 406 for an Accept header naming nothing we produce.
func notAcceptable(accept string) error {
	return &errors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (got %q)", accept),
	}}
}

// tooLarge is the 413 for a body over the limit.
// NotServed is the 404 for a path the server serves nothing at (an unknown
// group, version or resource): the message client-go gives a plain 404,
// "the server could not find the requested resource (get foos.example.com)",
// which users of kube-apiserver know, in a Status instead of its plain text.
// gr and name, when known, say what was asked for.
func NotServed(verb string, gr schema.GroupResource, name string) error {
	return errors.NewGenericServerResponse(http.StatusNotFound, verb, gr, name, "", 0, false)
}

func tooLarge() error {
	return errors.NewRequestEntityTooLargeError("limit is 3145728")
}

// storeError translates a storage error into the Status Kubernetes would
// send; the one place where store errors become HTTP errors.
func storeError(err error, gr schema.GroupResource, name string) error {
	var se *errors.StatusError
	switch {
	case err == nil:
		return nil
	case stderrors.As(err, &se):
		return se
	case stderrors.Is(err, storage.ErrNotFound):
		return errors.NewNotFound(gr, name)
	case stderrors.Is(err, storage.ErrKeyExists):
		return errors.NewAlreadyExists(gr, name)
	case stderrors.Is(err, storage.ErrConflict):
		return errors.NewConflict(gr, name, fmt.Errorf("%s", registryOptimisticLock))
	case stderrors.Is(err, storage.ErrCompacted):
		return errors.NewResourceExpired(fmt.Sprintf("too old resource version: %v", err))
	case stderrors.Is(err, storage.ErrFutureRevision):
		return withTooLargeCause(errors.NewTimeoutError(tooLargeRVCause, 1))
	case stderrors.Is(err, storage.ErrValueTooLarge):
		return errors.NewRequestEntityTooLargeError("object is too large to store")
	case stderrors.Is(err, storage.ErrInvalidKey):
		return errors.NewBadRequest(fmt.Sprintf("invalid name %q", name))
	case stderrors.Is(err, context.Canceled), stderrors.Is(err, context.DeadlineExceeded):
		return errors.NewTimeoutError("request did not complete in time", 1)
	}
	return errors.NewInternalError(err)
}

// tooLargeRVCause is the message of the cause that marks a 504 as a
// resourceVersion the store has not reached.
const tooLargeRVCause = "Too large resource version"

// tooLargeRV is the 504 Kubernetes sends for a read at a resourceVersion
// newer than the store's (storage.NewTooLargeResourceVersionError): retry
// after 1 s, and the ResourceVersionTooLarge cause that client-go's
// reflector and apierrors.IsTooLargeResourceVersion look for.
func tooLargeRV(rv, current int64) error {
	return withTooLargeCause(errors.NewTimeoutError(fmt.Sprintf("%s: %d, current: %d", tooLargeRVCause, rv, current), 1))
}

func withTooLargeCause(err *errors.StatusError) *errors.StatusError {
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: tooLargeRVCause}}
	return err
}

// registryOptimisticLock is Kubernetes' wording of a resourceVersion conflict.
const registryOptimisticLock = "the object has been modified; please apply your changes to the latest version and try again"

// asStatus returns the Status of any error, wrapping unknown errors as 500.
func asStatus(err error) metav1.Status {
	var se *errors.StatusError
	if stderrors.As(err, &se) {
		st := se.ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		return st
	}
	st := errors.NewInternalError(err).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	return st
}
