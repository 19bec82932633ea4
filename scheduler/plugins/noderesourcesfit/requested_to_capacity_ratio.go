package noderesourcesfit

import (
	"fmt"

	"github.com/skiffkube/skiff/scheduler/framework"
)

// ShapePoint is one point of RequestedToCapacityRatio's scoring function:
// at Utilization percent (0-100) of a resource used, the resource scores
// Score (0-10, scaled to the node score's 0-100).
type ShapePoint struct {
	Utilization int64
	Score       int64
}

// maxShapeScore is the top of a ShapePoint's score, kube-scheduler's
// MaxCustomPriorityScore.
const maxShapeScore = 10

// ValidateShape checks a shape as kube-scheduler does: at least one point,
// utilizations increasing within 0-100, scores within 0-10.
func ValidateShape(shape []ShapePoint) error {
	if len(shape) == 0 {
		return fmt.Errorf("at least one point must be specified")
	}
	for i, p := range shape {
		if i > 0 && shape[i-1].Utilization >= p.Utilization {
			return fmt.Errorf("[%d].utilization: values must be sorted in increasing order", i)
		}
		if p.Utilization < 0 || p.Utilization > 100 {
			return fmt.Errorf("[%d].utilization: %d not in valid range [0, 100]", i, p.Utilization)
		}
		if p.Score < 0 || p.Score > maxShapeScore {
			return fmt.Errorf("[%d].score: %d not in valid range [0, %d]", i, p.Score, maxShapeScore)
		}
	}
	return nil
}

// shapeScore is the broken line through the shape's points at utilization
// u: flat before the first point and after the last, linear (integer
// division) between two.
func shapeScore(shape []ShapePoint, u int64) int64 {
	scale := framework.MaxNodeScore / maxShapeScore
	for i, p := range shape {
		if u > p.Utilization {
			continue
		}
		if i == 0 {
			return p.Score * scale
		}
		prev := shape[i-1]
		lo, hi := prev.Score*scale, p.Score*scale
		return lo + (hi-lo)*(u-prev.Utilization)/(p.Utilization-prev.Utilization)
	}
	return shape[len(shape)-1].Score * scale
}

// ratioScore is one resource's RequestedToCapacityRatio score: the shape
// at the percentage used, or at 100 when more than allocatable is asked.
func ratioScore(shape []ShapePoint, requested, capacity int64) int64 {
	u := int64(100)
	if requested <= capacity {
		u = requested * 100 / capacity
	}
	return shapeScore(shape, u)
}
