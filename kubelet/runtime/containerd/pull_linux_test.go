//go:build linux

package containerd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// TestPullWithCredentials pulls from a real registry on 127.0.0.1 (plain
// HTTP, as for any loopback registry) that requires a login: no
// credentials and a wrong password fail with the registry's 401 as a
// PullError; credentials are tried in order until one works.
func TestPullWithCredentials(t *testing.T) {
	r := newTestRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	host, _ := testimage.ServeRegistry(t, "puller", "s3cret")
	ref := host + "/skiff/private:v1"
	testimage.Push(t, buildImage(t), ref, "puller", "s3cret")
	t.Cleanup(func() { _ = r.RemoveImage(context.Background(), ref) })

	for _, tc := range []struct {
		name  string
		creds []krt.Credential
	}{
		{"anonymous", nil},
		{"wrong password", []krt.Credential{{Username: "puller", Password: "wrong"}}},
	} {
		_, err := r.EnsureImage(ctx, ref, krt.PullIfNotPresent, tc.creds...)
		var pe *krt.PullError
		if !errors.Is(err, krt.ErrImagePull) || !errors.As(err, &pe) {
			t.Fatalf("%s: %v, want a PullError", tc.name, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, `failed to pull and unpack image "`+ref+`": `) || !strings.Contains(msg, "401 Unauthorized") {
			t.Errorf("%s: message %q, want containerd CRI's wording with the registry's 401 Unauthorized", tc.name, msg)
		}
		if present, _ := r.ImagePresent(ctx, ref); present {
			t.Fatalf("%s: the image is present after a refused pull", tc.name)
		}
	}

	start := time.Now()
	img, err := r.EnsureImage(ctx, ref, krt.PullIfNotPresent,
		krt.Credential{Username: "puller", Password: "old"}, krt.Credential{Username: "puller", Password: "s3cret"})
	if err != nil {
		t.Fatalf("pull with a wrong, then a right credential: %v", err)
	}
	t.Logf("pulled %s in %v", ref, time.Since(start))
	if !img.Pulled || img.Ref != ref || img.Digest == "" || img.Size == 0 {
		t.Errorf("pulled image %+v", img)
	}
	// Present now: IfNotPresent needs no registry, Always pulls again.
	if img, err := r.EnsureImage(ctx, ref, krt.PullIfNotPresent); err != nil || img.Pulled {
		t.Errorf("present image: %+v, %v", img, err)
	}
	if img, err := r.EnsureImage(ctx, ref, krt.PullAlways, krt.Credential{Username: "puller", Password: "s3cret"}); err != nil || !img.Pulled {
		t.Errorf("PullAlways with the right credential: %+v, %v", img, err)
	}
	// Always without the credential: the registry's refusal stands even
	// though the image is here (no fall-back to the local copy).
	if _, err := r.EnsureImage(ctx, ref, krt.PullAlways); !errors.Is(err, krt.ErrImagePull) || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("PullAlways of a present image without the credential: %v, want the 401 as ErrImagePull", err)
	}
	// An unreachable registry does fall back to the local copy.
	host2, stopRegistry := testimage.ServeRegistry(t, "", "")
	ref2 := host2 + "/skiff/offline:v1"
	testimage.Push(t, buildImage(t), ref2, "", "")
	t.Cleanup(func() { _ = r.RemoveImage(context.Background(), ref2) })
	if _, err := r.EnsureImage(ctx, ref2, krt.PullIfNotPresent); err != nil {
		t.Fatal(err)
	}
	stopRegistry()
	if img, err := r.EnsureImage(ctx, ref2, krt.PullAlways); err != nil || img.Pulled {
		t.Errorf("PullAlways with the registry gone: %+v, %v; want the local copy", img, err)
	}
}

// TestImageFSPath: containerd tells where its snapshotter keeps images.
func TestImageFSPath(t *testing.T) {
	r := newTestRuntime(t)
	p := r.ImageFSPath(context.Background())
	t.Logf("image file system: %s", p)
	if !strings.HasSuffix(p, "io.containerd.snapshotter.v1."+DefaultSnapshotter) {
		t.Errorf("ImageFSPath = %q, want the overlayfs snapshotter's root", p)
	}
}
