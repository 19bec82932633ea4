package imagegc

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// disk is an in-memory image store on a file system of 1000 bytes, of
// which base bytes hold other things: its free space follows the images.
type disk struct {
	mu         sync.Mutex
	base       int64
	images     map[string]krt.Image
	containers []krt.ContainerStatus
	removeErr  map[string]error
}

func newDisk(base int64, imgs ...krt.Image) *disk {
	d := &disk{base: base, images: map[string]krt.Image{}}
	for _, img := range imgs {
		d.images[img.Ref] = img
	}
	return d
}

func (d *disk) ListImages(context.Context) ([]krt.Image, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []krt.Image
	for _, img := range d.images {
		out = append(out, img)
	}
	return out, nil
}

func (d *disk) RemoveImage(_ context.Context, ref string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.removeErr[ref]; err != nil {
		return err
	}
	if _, ok := d.images[ref]; !ok {
		return krt.ErrNotFound
	}
	delete(d.images, ref)
	return nil
}

func (d *disk) ListContainers(context.Context, krt.ListFilter) ([]krt.ContainerStatus, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]krt.ContainerStatus(nil), d.containers...), nil
}

func (d *disk) use(refs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.containers = nil
	for _, r := range refs {
		d.containers = append(d.containers, krt.ContainerStatus{Image: r, State: krt.StateExited})
	}
}

func (d *disk) stat(string) (FSStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	used := d.base
	seen := map[string]bool{}
	for _, img := range d.images {
		if !seen[img.Digest] {
			used += img.Size
			seen[img.Digest] = true
		}
	}
	return FSStats{Capacity: 1000, Available: 1000 - used}, nil
}

func (d *disk) refs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for r := range d.images {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func img(name string, size int64) krt.Image {
	return krt.Image{Ref: "skiff.test/" + name + ":v1", Digest: "sha256:" + name, Size: size}
}

type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newManager(t *testing.T, d *disk, p Policy) (*Manager, *testClock, *record.FakeRecorder) {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	rec := record.NewFakeRecorder(10)
	m, err := New(Config{Runtime: d, Path: "/images", Policy: p, Now: clock.now, Stat: d.stat,
		Recorder: rec, Node: &corev1.ObjectReference{Kind: "Node", Name: "n1"}, ImageIDLabel: "image-id"})
	if err != nil {
		t.Fatal(err)
	}
	return m, clock, rec
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Policy
		want   string
	}{
		{"the defaults", DefaultPolicy(), ""},
		{"100 disables collection", Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, ""},
		{"zero low threshold", Policy{HighThresholdPercent: 1, LowThresholdPercent: 0}, ""},
		{"high above 100", Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "--image-gc-high-threshold 101 must be between 0 and 100"},
		{"negative low", Policy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "--image-gc-low-threshold -1 must be between 0 and 100"},
		{"low equal to high", Policy{HighThresholdPercent: 80, LowThresholdPercent: 80}, "--image-gc-low-threshold 80 must be less than --image-gc-high-threshold 80"},
		{"low above high", Policy{HighThresholdPercent: 0, LowThresholdPercent: 10}, "must be less than --image-gc-high-threshold 0"},
		{"negative minimum age", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "--image-minimum-gc-age -1s must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{Runtime: newDisk(0), Path: "/x", Policy: Policy{HighThresholdPercent: 200}}); err == nil {
		t.Error("New accepted a bad policy")
	}
	if _, err := New(Config{Runtime: newDisk(0), Policy: DefaultPolicy()}); err == nil {
		t.Error("New accepted no path")
	}
}

func TestNothingRemovedBelowTheHighThreshold(t *testing.T) {
	d := newDisk(500, img("a", 100), img("b", 200)) // 80% used
	m, clock, _ := newManager(t, d, Policy{HighThresholdPercent: 85, LowThresholdPercent: 50})
	clock.advance(time.Hour)
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := d.refs(); len(got) != 2 {
		t.Errorf("images left %v, want both", got)
	}
}

func TestCollectionRemovesLeastRecentlyUsedFirst(t *testing.T) {
	d := newDisk(300, img("old", 100), img("recent", 100), img("never", 100), img("busy", 100))
	m, clock, rec := newManager(t, d, Policy{HighThresholdPercent: 60, LowThresholdPercent: 50, MinAge: 2 * time.Minute})
	ctx := context.Background()

	// Usage 70%: a collection now finds every image too young.
	d.use("skiff.test/old:v1", "skiff.test/recent:v1", "skiff.test/busy:v1")
	if err := m.GarbageCollect(ctx); err == nil || !strings.Contains(err.Error(), "Attempted to free 200 bytes, but only found 0 bytes eligible to free.") {
		t.Fatalf("collection with only young images: %v", err)
	}
	if ev := <-rec.Events; ev != "Warning FreeDiskSpaceFailed Failed to garbage collect required amount of images. Attempted to free 200 bytes, but only found 0 bytes eligible to free." {
		t.Errorf("event %q", ev)
	}
	clock.advance(time.Minute)
	d.use("skiff.test/recent:v1", "skiff.test/busy:v1") // old last used a minute ago
	if _, err := m.FreeSpace(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute)
	d.use("skiff.test/busy:v1") // recent last used now-1m, old now-2m
	if _, err := m.FreeSpace(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// "young" appears now: too young to remove.
	d.images["skiff.test/young:v1"] = img("young", 50)
	clock.advance(time.Minute)
	// 75% used, low 50%: 250 bytes to free. Order: never (never used),
	// old, recent; busy is in use, young too young.
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := d.refs(), []string{"skiff.test/busy:v1", "skiff.test/young:v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the collection: %v, want %v", got, want)
	}
	// Nothing in use any more and young old enough: an image never used
	// goes before one used, however long ago, as in the kubelet.
	d.use()
	clock.advance(5 * time.Minute)
	if freed, err := m.FreeSpace(ctx, 1); err != nil || freed != 50 {
		t.Fatalf("FreeSpace(1) = %d, %v; want young's 50 bytes", freed, err)
	}
	if got, want := d.refs(), []string{"skiff.test/busy:v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after FreeSpace: %v, want %v", got, want)
	}
}

func TestFreeSpaceStopsOnceEnoughIsFreed(t *testing.T) {
	d := newDisk(0, img("a", 100), img("b", 100), img("c", 100))
	m, clock, _ := newManager(t, d, DefaultPolicy())
	ctx := context.Background()
	if _, err := m.FreeSpace(ctx, 1); err != nil { // first detection
		t.Fatal(err)
	}
	if n := len(d.refs()); n != 3 {
		t.Fatalf("images younger than the minimum age were removed: %d left", n)
	}
	clock.advance(DefaultMinAge)
	freed, err := m.FreeSpace(ctx, 150)
	if err != nil || freed != 200 {
		t.Errorf("FreeSpace(150) = %d, %v; want 200 (two images)", freed, err)
	}
	if got := d.refs(); len(got) != 1 {
		t.Errorf("left %v, want one image", got)
	}
	freed, err = m.DeleteUnusedImages(ctx)
	if err != nil || freed != 100 || len(d.refs()) != 0 {
		t.Errorf("DeleteUnusedImages = %d, %v; left %v", freed, err, d.refs())
	}
}

func TestImagesAreTheirDigest(t *testing.T) {
	// Two names of one image, and an image in use through its digest label.
	alias := krt.Image{Ref: "skiff.test/alias:v1", Digest: "sha256:a", Size: 100}
	d := newDisk(800, img("a", 100), alias, img("b", 100))
	d.containers = []krt.ContainerStatus{{Image: "skiff.test/renamed:v1", Labels: map[string]string{"image-id": "sha256:b"}}}
	m, _, _ := newManager(t, d, Policy{HighThresholdPercent: 90, LowThresholdPercent: 10})
	freed, err := m.FreeSpace(context.Background(), 1)
	if err != nil || freed != 100 {
		t.Errorf("freed %d, %v; want 100: both names of one image", freed, err)
	}
	if got, want := d.refs(), []string{"skiff.test/b:v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
}

func TestHighThreshold100DisablesCollection(t *testing.T) {
	d := newDisk(990, img("a", 10))
	m, clock, _ := newManager(t, d, Policy{HighThresholdPercent: 100, LowThresholdPercent: 0})
	clock.advance(time.Hour)
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(d.refs()) != 1 {
		t.Error("an image was removed with collection disabled")
	}
}

func TestRemovalErrorsAreReported(t *testing.T) {
	d := newDisk(900, img("stuck", 50), img("ok", 50))
	d.removeErr = map[string]error{"skiff.test/stuck:v1": errors.New("image in use by a snapshot")}
	m, clock, _ := newManager(t, d, Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: time.Hour})
	_ = m.GarbageCollect(context.Background()) // first detection
	clock.advance(time.Hour)
	err := m.GarbageCollect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "wanted to free 200 bytes, but freed 50 bytes space with errors in image deletion: image in use by a snapshot") {
		t.Errorf("GarbageCollect = %v", err)
	}
	if got := d.refs(); !reflect.DeepEqual(got, []string{"skiff.test/stuck:v1"}) {
		t.Errorf("left %v", got)
	}
}
