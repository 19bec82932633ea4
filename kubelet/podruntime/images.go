package podruntime

import (
	"context"
	"slices"
	"sort"

	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	corev1 "k8s.io/api/core/v1"
)

// maxNodeImages is the kubelet's --node-status-max-images default.
const maxNodeImages = 50

// NodeImages lists the stored images for node status as the kubelet does:
// one entry per image (digest) naming its repo digests and then its tags,
// largest first, at most 50.
func (r *Runtime) NodeImages(ctx context.Context) ([]corev1.ContainerImage, error) {
	imgs, err := r.c.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	type entry struct {
		digests, tags []string
		size          int64
	}
	byDigest := map[string]*entry{}
	var order []string
	for _, img := range imgs {
		e, ok := byDigest[img.Digest]
		if !ok {
			e = &entry{}
			byDigest[img.Digest] = e
			order = append(order, img.Digest)
		}
		e.size = max(e.size, img.Size)
		named, err := reference.ParseNormalizedNamed(img.Ref)
		if err != nil {
			e.tags = append(e.tags, img.Ref)
			continue
		}
		if _, isDigest := named.(reference.Digested); !isDigest {
			e.tags = append(e.tags, img.Ref)
		}
		if dg, err := digest.Parse(img.Digest); err == nil {
			if d, err := reference.WithDigest(reference.TrimNamed(named), dg); err == nil && !slices.Contains(e.digests, d.String()) {
				e.digests = append(e.digests, d.String())
			}
		}
	}
	out := make([]corev1.ContainerImage, 0, len(order))
	for _, d := range order {
		e := byDigest[d]
		out = append(out, corev1.ContainerImage{Names: append(e.digests, e.tags...), SizeBytes: e.size})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SizeBytes > out[j].SizeBytes })
	if len(out) > maxNodeImages {
		out = out[:maxNodeImages]
	}
	return out, nil
}
