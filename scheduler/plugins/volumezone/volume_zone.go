package volumezone

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "VolumeZone"
	// ErrReasonConflict is kube-scheduler's reason.
	ErrReasonConflict = "node(s) had no available volume zone"

	stateKey = framework.StateKey("PreFilter" + Name)
	// zoneDelimiter joins the zones of a volume in several (Kubernetes'
	// LabelMultiZoneDelimiter).
	zoneDelimiter = "__"
)

// topologyLabels are the labels compared, deprecated ones first, as
// kube-scheduler lists them.
var topologyLabels = []string{
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
}

// gaLabel is the GA label a deprecated one became.
func gaLabel(label string) string {
	switch label {
	case v1.LabelFailureDomainBetaZone:
		return v1.LabelTopologyZone
	case v1.LabelFailureDomainBetaRegion:
		return v1.LabelTopologyRegion
	}
	return label
}

// VolumeZone implements PreFilter and Filter.
type VolumeZone struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

// New builds the plugin; its listers come from the handle's informer factory.
func New(_ any, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's informer factory", Name)
	}
	f := h.SharedInformerFactory()
	return &VolumeZone{
		claims:  f.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: f.Core().V1().PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(),
	}, nil
}

// Name implements framework.Plugin.
func (*VolumeZone) Name() string { return Name }

// topology is one topology label of one of the pod's volumes.
type topology struct {
	volume string
	key    string
	values sets.Set[string]
}

// state holds the topologies of the pod's bound volumes.
type state struct {
	topologies []topology
}

func (s *state) Clone() framework.StateData { return s }

// PreFilter finds the zone and region labels of the pod's bound volumes,
// and skips the plugin when there are none to check.
func (pl *VolumeZone) PreFilter(_ context.Context, cs *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	tops, st := pl.podTopologies(pod)
	if !st.IsSuccess() {
		return nil, st
	}
	if len(tops) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	cs.Write(stateKey, &state{topologies: tops})
	return nil, nil
}

// podTopologies reads the topologies of the pod's bound claims' volumes,
// with kube-scheduler's reasons for a claim that cannot be resolved.
func (pl *VolumeZone) podTopologies(pod *v1.Pod) ([]topology, *framework.Status) {
	var out []topology
	for _, name := range framework.PodClaimNames(pod) {
		if name == "" {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no name")
		}
		claim, err := pl.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			return nil, errorStatus(err)
		}
		if claim.Spec.VolumeName == "" {
			className := volumehelpers.GetPersistentVolumeClaimClass(claim)
			if className == "" {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no pv name and storageClass name")
			}
			class, err := pl.classes.Get(className)
			if err != nil {
				return nil, errorStatus(err)
			}
			if class.VolumeBindingMode == nil {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("VolumeBindingMode not set for StorageClass %q", className))
			}
			if *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				continue // VolumeBinding picks a node for it.
			}
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolume had no name")
		}
		pv, err := pl.volumes.Get(claim.Spec.VolumeName)
		if err != nil {
			return nil, errorStatus(err)
		}
		out = append(out, volumeTopologies(pv)...)
	}
	return out, nil
}

// errorStatus turns a lister's error into kube-scheduler's status: a
// missing object cannot be resolved by trying other nodes.
func errorStatus(err error) *framework.Status {
	if apierrors.IsNotFound(err) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	return framework.AsStatus(err)
}

// volumeTopologies lists the zone and region labels of pv; a value that
// is not a well-formed list of zones is ignored, as kube-scheduler does.
// (The volume's node affinity is VolumeBinding's to check.)
func volumeTopologies(pv *v1.PersistentVolume) []topology {
	var out []topology
	for _, key := range topologyLabels {
		value, ok := pv.Labels[key]
		if !ok {
			continue
		}
		zones, ok := zoneSet(value)
		if !ok {
			continue
		}
		out = append(out, topology{volume: pv.Name, key: key, values: zones})
	}
	return out
}

// zoneSet splits a label value of zones joined by "__"; an empty zone
// makes it malformed.
func zoneSet(value string) (sets.Set[string], bool) {
	zones := sets.New[string]()
	for _, z := range strings.Split(value, zoneDelimiter) {
		z = strings.TrimSpace(z)
		if z == "" {
			return nil, false
		}
		zones.Insert(z)
	}
	return zones, true
}

// Filter admits the node if it has no zone or region label at all, or if
// each of the volumes' labels has a value the node has under the same
// label (or, for a deprecated one, under its GA successor).
func (pl *VolumeZone) Filter(_ context.Context, cs *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if len(pod.Spec.Volumes) == 0 {
		return nil
	}
	var tops []topology
	if d, err := cs.Read(stateKey); err == nil {
		s, ok := d.(*state)
		if !ok {
			return framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
		}
		tops = s.topologies
	} else {
		var st *framework.Status
		if tops, st = pl.podTopologies(pod); !st.IsSuccess() {
			return st
		}
	}
	labels := ni.Node().Labels
	constrained := false
	for _, key := range topologyLabels {
		if _, ok := labels[key]; ok {
			constrained = true
			break
		}
	}
	if !constrained {
		return nil
	}
	for _, t := range tops {
		v, ok := labels[t.key]
		if !ok {
			v, ok = labels[gaLabel(t.key)]
		}
		if !ok || !t.values.Has(v) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
		}
	}
	return nil
}
