package volumezone

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/schedtest"
)

// The cases follow kube-scheduler's
// TestIsSchedulableAfterPersistentVolumeClaimChange,
// TestIsSchedulableAfterStorageClassAdded and
// TestIsSchedulableAfterPersistentVolumeChange.
func TestIsSchedulableAfterPersistentVolumeClaimChange(t *testing.T) {
	pod := podWithClaims("data")
	other := claim("data", "", "pv")
	other.Namespace = "elsewhere"
	schedtest.RunHintCases(t, framework.IsSchedulableAfterOwnClaimChange, []schedtest.HintCase{
		{Name: "an object that is no claim is an error, and queues", Pod: pod, New: "not-a-claim", Want: framework.Queue, WantErr: true},
		{Name: "the pod's claim added queues", Pod: pod, New: claim("data", "", ""), Want: framework.Queue},
		{Name: "the pod's claim bound queues", Pod: pod, Old: claim("data", "", ""), New: claim("data", "", "pv"), Want: framework.Queue},
		{Name: "another claim is skipped", Pod: pod, New: claim("logs", "", "pv"), Want: framework.QueueSkip},
		{Name: "a claim of that name in another namespace is skipped", Pod: pod, New: other, Want: framework.QueueSkip},
	})
}

func TestIsSchedulableAfterStorageClassAdded(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	pod := podWithClaims("data")
	schedtest.RunHintCases(t, isSchedulableAfterStorageClassAdded, []schedtest.HintCase{
		{Name: "an object that is no class is an error, and queues", Pod: pod, New: "not-a-class", Want: framework.Queue, WantErr: true},
		{Name: "a WaitForFirstConsumer class queues", Pod: pod, New: class("c", &wffc), Want: framework.Queue},
		{Name: "an Immediate class is skipped", Pod: pod, New: class("c", &immediate), Want: framework.QueueSkip},
		{Name: "a class without a mode is skipped", Pod: pod, New: class("c", nil), Want: framework.QueueSkip},
	})
}

func TestIsSchedulableAfterPersistentVolumeChange(t *testing.T) {
	pod := podWithClaims("data")
	zoneA := volume("pv", v1.LabelTopologyZone, "a")
	relabelled := volume("pv", v1.LabelTopologyZone, "a", "team", "x")
	schedtest.RunHintCases(t, isSchedulableAfterPersistentVolumeChange, []schedtest.HintCase{
		{Name: "an object that is no volume is an error, and queues", Pod: pod, New: "not-a-volume", Want: framework.Queue, WantErr: true},
		{Name: "a new volume queues", Pod: pod, New: zoneA, Want: framework.Queue},
		{Name: "a volume moved to another zone queues", Pod: pod, Old: zoneA, New: volume("pv", v1.LabelTopologyZone, "b"), Want: framework.Queue},
		{Name: "a volume given a zone queues", Pod: pod, Old: volume("pv"), New: zoneA, Want: framework.Queue},
		{Name: "a volume given a deprecated region queues", Pod: pod, Old: zoneA, New: volume("pv", v1.LabelTopologyZone, "a", v1.LabelFailureDomainBetaRegion, "r"), Want: framework.Queue},
		{Name: "a volume relabelled outside its topology is skipped", Pod: pod, Old: zoneA, New: relabelled, Want: framework.QueueSkip},
	})
}

// A node joining or relabelled, a claim added or changed, a volume added or
// changed and a class added may each undo a rejection; a node's taints or
// a claim's deletion may not.
func TestEventsToRegister(t *testing.T) {
	pl := &VolumeZone{}
	registered := pl.EventsToRegister()
	for _, c := range []struct {
		evt  framework.ClusterEvent
		want bool
	}{
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, true},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel}, true},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeTaint}, false},
		{framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Update}, true},
		{framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Update}, true},
		{framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add}, true},
		{framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Update}, false},
		{framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, false},
	} {
		got := false
		for _, r := range registered {
			if c.evt.Match(r.Event) {
				got = true
			}
		}
		if got != c.want {
			t.Errorf("%s: registered %v, want %v", c.evt.Label(), got, c.want)
		}
	}
}
