package framework

// DefaultNormalizeScore scales scores so the highest becomes maxPriority
// (keeping proportions); reverse flips them (for "fewer is better" counts).
// All-zero scores become maxPriority when reversed, zero otherwise.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) *Status {
	var top int64
	for _, s := range scores {
		if s.Score > top {
			top = s.Score
		}
	}
	if top == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / top
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}
