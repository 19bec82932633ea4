package imagelocality

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// Name is the plugin's registry name.
const Name = "ImageLocality"

// Thresholds, as in kube-scheduler: below minThreshold a node gets no credit,
// at maxContainerThreshold per container it gets full credit.
const (
	mb                    int64 = 1024 * 1024
	minThreshold                = 23 * mb
	maxContainerThreshold       = 1000 * mb
)

// ImageLocality implements Score.
type ImageLocality struct{ h framework.Handle }

// New builds the plugin.
func New(_ any, h framework.Handle) (framework.Plugin, error) { return &ImageLocality{h: h}, nil }

// Name implements framework.Plugin.
func (*ImageLocality) Name() string { return Name }

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState []string

func (s preScoreState) Clone() framework.StateData { return s }

// PreScore normalizes the pod's image names once.
func (pl *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var images preScoreState
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			images = append(images, NormalizedImageName(c.Image))
		}
	}
	state.Write(preScoreKey, images)
	return nil
}

// Score maps the spread-weighted size of present images into [0, 100].
func (pl *ImageLocality) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, err := state.Read(preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	images, ok := d.(preScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("%s: unexpected state %T", Name, d))
	}
	total := len(pl.h.SnapshotLister().List())
	var sum int64
	if len(ni.ImageStates) > 0 && total > 0 {
		for _, img := range images {
			if st, ok := ni.ImageStates[img]; ok {
				// The spread first, then the size scaled by it, in this
				// order as kube-scheduler does: (size × nodes)/total
				// rounds differently for some sizes, by a byte that can
				// tip the score by a point.
				spread := float64(st.NumNodes) / float64(total)
				sum += int64(float64(st.Size) * spread)
			}
		}
	}
	return scale(sum, int64(len(images))*maxContainerThreshold), nil
}

func scale(sum, max int64) int64 {
	if max <= minThreshold {
		max = minThreshold + 1
	}
	switch {
	case sum < minThreshold:
		sum = minThreshold
	case sum > max:
		sum = max
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (max - minThreshold)
}

// NormalizedImageName adds ":latest" to an image reference without tag or
// digest, as nodes report images by their full reference.
func NormalizedImageName(name string) string {
	if strings.Contains(name, "@") {
		return name
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name
	}
	return name + ":latest"
}
