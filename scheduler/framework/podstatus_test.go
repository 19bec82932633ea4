package framework

import (
	"context"
	"errors"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestPatchPodStatusRetriesTransientErrors: as kube-scheduler's
// util.PatchPodStatus, a status patch refused with an internal error, an
// unavailable server or a refused connection is sent again (four tries in
// all, client-go's DefaultBackoff), and any other refusal is final at once.
func TestPatchPodStatusRetriesTransientErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name      string
		failures  []error // answers to the first tries; later ones succeed
		wantTries int
		wantErr   bool
	}{
		{"accepted at once", nil, 1, false},
		{"one internal error", []error{apierrors.NewInternalError(errors.New("boom"))}, 2, false},
		{"unavailable, then refused connections", []error{apierrors.NewServiceUnavailable("restarting"), syscall.ECONNREFUSED, syscall.ECONNREFUSED}, 4, false},
		{"unavailable at every try", []error{apierrors.NewServiceUnavailable("down"), apierrors.NewServiceUnavailable("down"),
			apierrors.NewServiceUnavailable("down"), apierrors.NewServiceUnavailable("down"), apierrors.NewServiceUnavailable("down")}, 4, true},
		{"forbidden", []error{apierrors.NewForbidden(gr, "p", errors.New("no"))}, 1, true},
		{"gone", []error{apierrors.NewNotFound(gr, "p")}, 1, true},
		{"invalid", []error{apierrors.NewBadRequest("bad patch")}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewSimpleClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
			tries := 0
			cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				tries++
				if tries <= len(tc.failures) {
					return true, nil, tc.failures[tries-1]
				}
				return false, nil, nil
			})
			err := PatchPodStatus(context.Background(), cs, "ns", "p", []byte(`{"status":{"nominatedNodeName":"n"}}`))
			if (err != nil) != tc.wantErr || tries != tc.wantTries {
				t.Fatalf("err %v after %d tries, want error %v after %d", err, tries, tc.wantErr, tc.wantTries)
			}
			if tc.wantErr {
				return
			}
			p, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil || p.Status.NominatedNodeName != "n" {
				t.Fatalf("pod after the patch: %v, %v; want nominated to n", p, err)
			}
		})
	}
}
