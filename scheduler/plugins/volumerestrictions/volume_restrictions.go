package volumerestrictions

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "VolumeRestrictions"
	// ErrReasonReadWriteOncePodConflict is kube-scheduler's reason.
	ErrReasonReadWriteOncePodConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
	stateKey                          = framework.StateKey("PreFilter" + Name)
)

var _ framework.PreFilterExtensions = (*VolumeRestrictions)(nil)

// VolumeRestrictions implements PreFilter (with extensions) and Filter.
type VolumeRestrictions struct {
	claims corelisters.PersistentVolumeClaimLister
}

// New builds the plugin.
func New(_ any, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's informer factory", Name)
	}
	return &VolumeRestrictions{claims: h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister()}, nil
}

// Name implements framework.Plugin.
func (*VolumeRestrictions) Name() string { return Name }

// state holds the pod's ReadWriteOncePod claims ("namespace/name") and how
// many other pods placed in the cluster use one of them.
type state struct {
	claims    sets.Set[string]
	conflicts int
}

func (s *state) Clone() framework.StateData { return &state{claims: s.claims, conflicts: s.conflicts} }

// uses counts the claims of pod among s.claims.
func (s *state) uses(pod *v1.Pod) int {
	n := 0
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && s.claims.Has(pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName) {
			n++
		}
	}
	return n
}

// PreFilter finds the pod's ReadWriteOncePod claims and counts the placed
// pods that use them. A missing claim is left to VolumeBinding to report.
func (pl *VolumeRestrictions) PreFilter(_ context.Context, cs *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s := &state{claims: sets.New[string]()}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claim, err := pl.claims.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if slices.Contains(claim.Spec.AccessModes, v1.ReadWriteOncePod) {
			s.claims.Insert(pod.Namespace + "/" + claim.Name)
		}
	}
	if s.claims.Len() == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	for _, ni := range nodes {
		for _, pi := range ni.Pods {
			if pi.Pod.UID != pod.UID {
				s.conflicts += s.uses(pi.Pod)
			}
		}
	}
	cs.Write(stateKey, s)
	return nil, nil
}

// AddPod and RemovePod (framework.PreFilterExtensions) let preemption see
// a victim's claims freed.

// AddPod counts a pod placed during preemption's simulation.
func (pl *VolumeRestrictions) AddPod(_ context.Context, cs *framework.CycleState, _ *v1.Pod, toAdd *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := read(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflicts += s.uses(toAdd.Pod)
	return nil
}

// RemovePod uncounts a victim of preemption's simulation.
func (pl *VolumeRestrictions) RemovePod(_ context.Context, cs *framework.CycleState, _ *v1.Pod, toRemove *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, err := read(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.conflicts -= s.uses(toRemove.Pod)
	return nil
}

// Filter refuses every node while another pod holds one of the claims: the
// claim is exclusive to a pod, wherever that pod runs.
func (pl *VolumeRestrictions) Filter(_ context.Context, cs *framework.CycleState, _ *v1.Pod, _ *framework.NodeInfo) *framework.Status {
	s, err := read(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s.conflicts > 0 {
		return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
	}
	return nil
}

func read(cs *framework.CycleState) (*state, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*state)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected state %T", Name, d)
	}
	return s, nil
}
