//go:build linux

package imagegc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/nodetest"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
	"github.com/skiffkube/skiff/kubelet/runtime/containerd"
	"github.com/skiffkube/skiff/kubelet/testimage"
)

// TestCollectOnContainerd imports two images into a namespace of its own
// on a real containerd, runs a container of one (then stops it: exited
// containers keep their image in use) and collects with thresholds that
// force a collection: the unused image goes, the used one stays, and the
// file system measured is containerd's snapshotter root.
func TestCollectOnContainerd(t *testing.T) {
	socket := nodetest.RequireContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	r, err := containerd.New(ctx, containerd.Config{Socket: socket, Namespace: "skiff-test-imagegc", CgroupRoot: "/skiff-test-imagegc", LogDriver: testimage.BuildLogDriver(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // after the clean-ups below

	usedTar, used := testimage.Build(t, dir)
	unusedTar := filepath.Join(dir, "unused.tar")
	f, err := os.Create(unusedTar)
	if err != nil {
		t.Fatal(err)
	}
	const unused = "skiff.test/gc-unused:v1"
	if err := testimage.Pack(f, testimage.Image{Ref: unused, Files: []testimage.File{{Path: "data", Data: []byte("only here to be collected"), Mode: 0o644}}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tar := range []string{usedTar, unusedTar} {
		if _, err := r.ImportImages(ctx, tar); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, ref := range []string{used, unused} {
			_ = r.RemoveImage(context.Background(), ref)
		}
	})

	cfg := krt.ContainerConfig{PodUID: fmt.Sprintf("imagegc-test-%d", time.Now().UnixNano()), PodNamespace: "default", PodName: "gc", Name: "main",
		Image: used, Args: []string{"exit", "0"}, LogPath: filepath.Join(dir, "logs", "main.log")}
	id, err := r.CreateContainer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = r.RemoveContainer(context.Background(), id)
		_ = r.RemovePod(context.Background(), cfg.PodUID)
	})
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := r.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == krt.StateExited {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("container still %s", st.State)
		}
		time.Sleep(100 * time.Millisecond)
	}

	path := r.ImageFSPath(ctx)
	m, err := New(Config{Runtime: r, Path: path, Policy: Policy{HighThresholdPercent: 1, LowThresholdPercent: 0}})
	if err != nil {
		t.Fatal(err)
	}
	// Freeing down to 0% cannot succeed: the collection removes what it
	// may and says how much was missing.
	err = m.GarbageCollect(ctx)
	if err == nil || !strings.Contains(err.Error(), "Failed to garbage collect required amount of images.") {
		t.Errorf("GarbageCollect = %v, want the kubelet's FreeDiskSpaceFailed error", err)
	}
	imgs, err := r.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, img := range imgs {
		refs = append(refs, img.Ref)
	}
	if !slices.Contains(refs, used) || slices.Contains(refs, unused) {
		t.Errorf("images after collection: %v, want %s kept and %s removed", refs, used, unused)
	}
}
