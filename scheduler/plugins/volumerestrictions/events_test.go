package volumerestrictions

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases are kube-scheduler's Test_isSchedulableAfterPodDeleted (less
// the in-tree disk conflicts, which skiff's plugin does not check).
func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	pod := usingClaim("p", "uid-p", "solo")
	schedtest.RunHintCases(t, isSchedulableAfterPodDeleted, []schedtest.HintCase{
		{Name: "an object that is no pod is an error, and queues", Pod: pod, Old: "not-a-pod", Want: framework.Queue, WantErr: true},
		{Name: "a pod using the same claim queues", Pod: pod, Old: usingClaim("holder", "uid-holder", "solo"), Want: framework.Queue},
		{Name: "a pod using another claim is skipped", Pod: pod, Old: usingClaim("holder", "uid-holder", "other"), Want: framework.QueueSkip},
		{Name: "a pod without volumes is skipped", Pod: pod, Old: schedtest.MakePod().Name("holder").Namespace("ns").Obj(), Want: framework.QueueSkip},
		{Name: "a pod in another namespace is skipped", Pod: pod, Old: func() *v1.Pod {
			p := usingClaim("holder", "uid-holder", "solo")
			p.Namespace = "elsewhere"
			return p
		}(), Want: framework.QueueSkip},
	})
}

// The cases are kube-scheduler's
// Test_isSchedulableAfterPersistentVolumeClaimChange.
func TestIsSchedulableAfterPersistentVolumeClaimAdded(t *testing.T) {
	pod := usingClaim("p", "uid-p", "solo")
	claim := func(ns, name string) *v1.PersistentVolumeClaim {
		return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	schedtest.RunHintCases(t, isSchedulableAfterPersistentVolumeClaimAdded, []schedtest.HintCase{
		{Name: "an object that is no claim is an error, and queues", Pod: pod, New: "not-a-claim", Want: framework.Queue, WantErr: true},
		{Name: "the pod's claim queues", Pod: pod, New: claim("ns", "solo"), Want: framework.Queue},
		{Name: "another claim is skipped", Pod: pod, New: claim("ns", "other"), Want: framework.QueueSkip},
		{Name: "a claim of that name in another namespace is skipped", Pod: pod, New: claim("elsewhere", "solo"), Want: framework.QueueSkip},
		{Name: "a pod without claims is skipped", Pod: schedtest.MakePod().Name("p").Namespace("ns").Obj(), New: claim("ns", "solo"), Want: framework.QueueSkip},
	})
}
