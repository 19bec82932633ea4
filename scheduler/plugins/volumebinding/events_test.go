package volumebinding

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

func hintPod(claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func namedClaim(ns, name string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// The cases are kube-scheduler's TestIsSchedulableAfterPersistentVolumeClaimChange.
func TestIsSchedulableAfterClaimChange(t *testing.T) {
	for _, c := range []struct {
		name     string
		pod      *v1.Pod
		old, new any
		want     framework.QueueingHint
		wantErr  bool
	}{
		{"an object that is no claim is an error, and queues", hintPod("a"), nil, "not-a-claim", framework.Queue, true},
		{"the pod's claim created queues", hintPod("a"), nil, namedClaim("ns", "a"), framework.Queue, false},
		{"the pod's claim updated queues", hintPod("a", "b"), namedClaim("ns", "b"), namedClaim("ns", "b"), framework.Queue, false},
		{"a claim of another namespace is skipped", hintPod("a"), nil, namedClaim("other", "a"), framework.QueueSkip, false},
		{"a claim the pod does not use is skipped", hintPod("a"), nil, namedClaim("ns", "b"), framework.QueueSkip, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := framework.IsSchedulableAfterOwnClaimChange(c.pod, c.old, c.new)
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("got %v, %v; want %v (error: %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}

// The cases are kube-scheduler's TestIsSchedulableAfterStorageClassChange.
func TestIsSchedulableAfterStorageClassChange(t *testing.T) {
	class := func(zones ...string) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}}
		if len(zones) > 0 {
			sc.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
				{Key: v1.LabelTopologyZone, Values: zones}}}}
		}
		return sc
	}
	for _, c := range []struct {
		name     string
		old, new any
		want     framework.QueueingHint
		wantErr  bool
	}{
		{"an object that is no storage class is an error, and queues", nil, "not-a-class", framework.Queue, true},
		{"a class created queues", nil, class(), framework.Queue, false},
		{"a class whose allowed topologies changed queues", class("a"), class("a", "b"), framework.Queue, false},
		{"a class updated otherwise is skipped", class("a"), func() *storagev1.StorageClass {
			sc := class("a")
			sc.Labels = map[string]string{"x": "y"}
			return sc
		}(), framework.QueueSkip, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := isSchedulableAfterStorageClassChange(hintPod("a"), c.old, c.new)
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("got %v, %v; want %v (error: %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}
