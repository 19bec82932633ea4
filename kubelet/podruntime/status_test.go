package podruntime

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// A container reports the image it was created from, as the kubelet
// reports the runtime's: an init container that completed before a pod
// update changed its image (it is not run again) keeps the old one, with
// the old image's ID. One created before the spec's image was recorded
// reports the spec's.
func TestReportedImageIsTheOneTheContainerRan(t *testing.T) {
	c := &corev1.Container{Name: "setup", Image: "example.com/setup:2"}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"created from the old image", map[string]string{labelSpecImage: "example.com/setup:1", labelImageID: "sha256:1"}, "example.com/setup:1"},
		{"created before the label", map[string]string{labelImageID: "sha256:1"}, "example.com/setup:2"},
	} {
		s := krt.ContainerStatus{ID: "c1", Name: "setup", State: krt.StateExited, Reason: "Completed", StartedAt: now, FinishedAt: now, Labels: tc.labels}
		if got := report(c, s, nil); got.Image != tc.want || got.ImageID != "sha256:1" {
			t.Errorf("%s: image %q (ID %q), want %q", tc.name, got.Image, got.ImageID, tc.want)
		}
	}
}
