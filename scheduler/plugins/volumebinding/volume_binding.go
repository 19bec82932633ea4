package volumebinding

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/skiffkube/skiff/scheduler/framework"
)

const (
	// Name is the plugin's registry name.
	Name = "VolumeBinding"

	// Reasons, in kube-scheduler's words.
	ErrReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	ErrReasonNodeConflict     = "node(s) had volume node affinity conflict"
	ErrReasonPVNotExist       = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"

	// DefaultBindTimeout is kube-scheduler's bindTimeoutSeconds.
	DefaultBindTimeout = 600 * time.Second

	stateKey framework.StateKey = Name
)

// Args configure the plugin.
type Args struct {
	// BindTimeout bounds PreBind's wait for claims to become Bound.
	BindTimeout time.Duration
}

// VolumeBinding implements PreFilter, Filter and PreBind.
type VolumeBinding struct {
	handle  framework.Handle
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	timeout time.Duration
	poll    time.Duration
}

// New builds the plugin; its listers come from the handle's informer factory.
func New(args any, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's informer factory", Name)
	}
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if a.BindTimeout <= 0 {
		a.BindTimeout = DefaultBindTimeout
	}
	f := h.SharedInformerFactory()
	return &VolumeBinding{
		handle: h, timeout: a.BindTimeout, poll: 100 * time.Millisecond,
		claims:  f.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: f.Core().V1().PersistentVolumes().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(),
	}, nil
}

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return Name }

// state is what PreFilter learned about the pod's claims.
type state struct {
	// bound are the volumes of bound claims.
	bound []*v1.PersistentVolume
	// delayed are unbound claims of WaitForFirstConsumer classes.
	delayed []*v1.PersistentVolumeClaim
}

func (s *state) Clone() framework.StateData { return s }

// PreFilter checks the claims exist and sorts them into bound and delayed.
func (pl *VolumeBinding) PreFilter(_ context.Context, cs *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	names := framework.PodClaimNames(pod)
	if len(names) == 0 {
		// Nothing to check: Filter is skipped, PreBind finds no state.
		return nil, framework.NewStatus(framework.Skip)
	}
	st := &state{}
	for _, name := range names {
		claim, err := pl.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		}
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if claim.DeletionTimestamp != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if claim.Spec.VolumeName != "" {
			pv, err := pl.volumes.Get(claim.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPVNotExist)
			}
			if err != nil {
				return nil, framework.AsStatus(err)
			}
			st.bound = append(st.bound, pv)
			continue
		}
		if !pl.delayed(claim) {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
		}
		st.delayed = append(st.delayed, claim)
	}
	cs.Write(stateKey, st)
	return nil, nil
}

func (pl *VolumeBinding) class(claim *v1.PersistentVolumeClaim) *storagev1.StorageClass {
	name := volumehelpers.GetPersistentVolumeClaimClass(claim)
	if name == "" {
		return nil
	}
	c, err := pl.classes.Get(name)
	if err != nil {
		return nil
	}
	return c
}

func (pl *VolumeBinding) delayed(claim *v1.PersistentVolumeClaim) bool {
	c := pl.class(claim)
	return c != nil && c.VolumeBindingMode != nil && *c.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

func readState(cs *framework.CycleState) (*state, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*state)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T", Name, d)
	}
	return s, nil
}

// Filter checks node affinity of bound volumes and whether delayed claims
// can be served on the node.
func (pl *VolumeBinding) Filter(_ context.Context, cs *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	st, err := readState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(st.bound) == 0 && len(st.delayed) == 0 {
		return nil
	}
	node := ni.Node()
	for _, pv := range st.bound {
		if err := volumehelpers.CheckNodeAffinity(pv, node.Labels); err != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	if len(st.delayed) == 0 {
		return nil
	}
	_, ok, err := pl.findVolumes(st.delayed, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonBindConflict)
	}
	return nil
}

// findVolumes matches each delayed claim to an available volume on node
// (each volume used once) or to its class's provisioner; ok is false when a
// claim can be served neither way.
func (pl *VolumeBinding) findVolumes(claims []*v1.PersistentVolumeClaim, node *v1.Node) (map[string]*v1.PersistentVolume, bool, error) {
	all, err := pl.volumes.List(labels.Everything())
	if err != nil {
		return nil, false, err
	}
	chosen := map[string]*v1.PersistentVolume{}
	for _, claim := range claims {
		pv, err := volumehelpers.FindMatchingVolume(claim, all, node, chosen, false, false)
		if err != nil {
			return nil, false, err
		}
		if pv != nil {
			chosen[pv.Name] = pv
			continue
		}
		c := pl.class(claim)
		if c == nil || c.Provisioner == volumehelpers.NotSupportedProvisioner {
			return nil, false, nil
		}
	}
	return chosen, true, nil
}

// PreBind marks each delayed claim with the chosen node, then waits until
// the binder (with the provisioner) has bound them all.
func (pl *VolumeBinding) PreBind(ctx context.Context, cs *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	st, err := readState(cs)
	if err != nil || len(st.delayed) == 0 {
		return nil // no claims (PreFilter skipped) or none to bind
	}
	client := pl.handle.ClientSet()
	// marked: the claim is known (in the cache) to carry the selected
	// node; its annotation disappearing afterwards is the provisioner
	// giving the node back.
	marked := map[string]bool{}
	for _, claim := range st.delayed {
		if claim.Annotations[volumehelpers.AnnSelectedNode] == nodeName {
			marked[claim.Name] = true
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{volumehelpers.AnnSelectedNode: nodeName}}})
		if _, err := client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("selecting node %s for persistentvolumeclaim %q: %w", nodeName, claim.Name, err))
		}
	}
	err = wait.PollUntilContextTimeout(ctx, pl.poll, pl.timeout, true, func(context.Context) (bool, error) {
		for _, claim := range st.delayed {
			cur, err := pl.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
			if err != nil {
				if apierrors.IsNotFound(err) {
					return false, fmt.Errorf("persistentvolumeclaim %q was deleted while binding", claim.Name)
				}
				return false, nil
			}
			if cur.Status.Phase != v1.ClaimBound || cur.Spec.VolumeName == "" {
				if cur.Annotations[volumehelpers.AnnSelectedNode] == nodeName {
					marked[claim.Name] = true
				} else if marked[claim.Name] {
					// The provisioner could not serve this node and
					// removed the annotation (Kubernetes' signal to
					// schedule again).
					return false, fmt.Errorf("provisioning failed for PVC %q", claim.Name)
				}
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	return nil
}
