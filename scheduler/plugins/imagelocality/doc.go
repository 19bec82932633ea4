// Package imagelocality is the ImageLocality plugin: nodes that already hold
// the pod's images score higher, by image size, discounted for images present
// on few nodes of the cluster (so pods don't pile onto the one node that
// happened to pull an image first).
package imagelocality
