package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ComputeHash returns the pod-template-hash of a template: FNV-32a over a deterministic dump of the
// template, then over the collision count if set, encoded with the alphabet Kubernetes uses for
// generated names (no vowels, so no words). Bumping collisionCount gives a new name when a ReplicaSet
// with the same hash but another template already exists.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	// dump.ForHash prints maps with sorted keys and follows pointers, so equal templates hash equally.
	fmt.Fprint(h, dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}
