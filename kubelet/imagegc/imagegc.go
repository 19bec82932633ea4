package imagegc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// Defaults of the kubelet's flags.
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	// Period is how often the kubelet checks the image file system.
	Period = 5 * time.Minute
)

// Event reasons, as the kubelet's.
const (
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
)

// Policy is when and how far to collect.
type Policy struct {
	// HighThresholdPercent of the image file system used starts a
	// collection; 100 disables collection by usage (FreeSpace still works).
	HighThresholdPercent int
	// LowThresholdPercent is the usage a collection frees down to.
	LowThresholdPercent int
	// MinAge keeps images seen for less than this.
	MinAge time.Duration
}

// DefaultPolicy is the kubelet's default: 85%, 80%, 2m.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: DefaultHighThresholdPercent, LowThresholdPercent: DefaultLowThresholdPercent, MinAge: DefaultMinAge}
}

// Validate checks the thresholds as the kubelet validates its flags:
// each within 0–100, low below high; errors name the flags.
func (p Policy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-high-threshold %d must be between 0 and 100", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold %d must be between 0 and 100", p.LowThresholdPercent))
	}
	if len(errs) == 0 && p.LowThresholdPercent >= p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold %d must be less than --image-gc-high-threshold %d", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("--image-minimum-gc-age %v must not be negative", p.MinAge))
	}
	return errors.Join(errs...)
}

// Runtime is what collection needs of the container runtime.
type Runtime interface {
	ListImages(ctx context.Context) ([]krt.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ListContainers(ctx context.Context, filter krt.ListFilter) ([]krt.ContainerStatus, error)
}

// FSStats is a file system's size and free space in bytes.
type FSStats struct {
	Capacity  int64
	Available int64
}

// Config of a Manager.
type Config struct {
	Runtime Runtime
	// Path is on the image file system (containerd's snapshotter root).
	Path   string
	Policy Policy
	// ImageIDLabel, if set, is the container label holding the digest of
	// its image (podruntime records one), so that an image is in use
	// whatever name the container was created with.
	ImageIDLabel string
	// Recorder and Node receive the Node's Warning Events; optional.
	Recorder record.EventRecorder
	Node     *corev1.ObjectReference
	Logger   *slog.Logger
	// Now and Stat default to the clock and statfs(2).
	Now  func() time.Time
	Stat func(path string) (FSStats, error)
}

// imageRecord is what the manager knows of one image (all names of one digest).
type imageRecord struct {
	refs          []string
	size          int64
	firstDetected time.Time
	lastUsed      time.Time
}

// Manager collects images; its methods are safe for concurrent use and
// collections run one at a time.
type Manager struct {
	cfg Config

	gcMu sync.Mutex // one collection at a time

	mu     sync.Mutex
	images map[string]*imageRecord // by digest
}

// New checks cfg and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("imagegc: Runtime is required")
	}
	if cfg.Path == "" {
		return nil, errors.New("imagegc: Path of the image file system is required")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Stat == nil {
		cfg.Stat = statFS
	}
	return &Manager{cfg: cfg, images: map[string]*imageRecord{}}, nil
}

// Run detects images and collects every Period until ctx ends, as the
// kubelet: a failure is logged, and a second failure in a row is also an
// ImageGCFailed Event.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(Period)
	defer t.Stop()
	failedBefore := false
	for {
		err := m.GarbageCollect(ctx)
		switch {
		case err == nil:
			failedBefore = false
		case ctx.Err() != nil:
			return
		case failedBefore:
			m.cfg.Logger.Error("image garbage collection failed multiple times in a row", "err", err)
			m.event(ReasonImageGCFailed, err.Error())
		default:
			m.cfg.Logger.Warn("image garbage collection failed once", "err", err)
			failedBefore = true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// GarbageCollect frees space down to the low threshold if usage is at or
// above the high one. Too little freed is an error and a
// FreeDiskSpaceFailed Event.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	now := m.cfg.Now()
	if err := m.detect(ctx, now); err != nil {
		return err
	}
	p := m.cfg.Policy
	if p.HighThresholdPercent >= 100 {
		return nil
	}
	fs, err := m.cfg.Stat(m.cfg.Path)
	if err != nil {
		return fmt.Errorf("image file system %s: %w", m.cfg.Path, err)
	}
	if fs.Capacity <= 0 || fs.Available > fs.Capacity {
		return fmt.Errorf("image file system %s: available %d bytes of capacity %d", m.cfg.Path, fs.Available, fs.Capacity)
	}
	usage := 100 - int(fs.Available*100/fs.Capacity)
	if usage < p.HighThresholdPercent {
		return nil
	}
	toFree := fs.Capacity*int64(100-p.LowThresholdPercent)/100 - fs.Available
	m.cfg.Logger.Info("image file system above the high threshold, removing unused images",
		"usage", usage, "highThreshold", p.HighThresholdPercent, "bytesToFree", toFree)
	freed, err := m.freeSpace(ctx, toFree, now)
	if err != nil {
		return err
	}
	if freed < toFree {
		// The kubelet's words.
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
		m.event(ReasonFreeDiskSpaceFailed, err.Error())
		return err
	}
	return nil
}

// FreeSpace removes unused images old enough, least recently used first,
// until bytes are freed; it returns how much was freed (in image sizes,
// which may be less than fewer bytes of the disk: shared layers stay).
func (m *Manager) FreeSpace(ctx context.Context, bytes int64) (int64, error) {
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	now := m.cfg.Now()
	if err := m.detect(ctx, now); err != nil {
		return 0, err
	}
	return m.freeSpace(ctx, bytes, now)
}

// DeleteUnusedImages removes every unused image old enough, as the
// kubelet's eviction manager asks under disk pressure.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	return m.FreeSpace(ctx, 1<<62)
}

// detect refreshes the image records: new images are first detected now,
// images used by a container are last used now, vanished images are
// forgotten.
func (m *Manager) detect(ctx context.Context, now time.Time) error {
	imgs, err := m.cfg.Runtime.ListImages(ctx)
	if err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	ctrs, err := m.cfg.Runtime.ListContainers(ctx, krt.ListFilter{})
	if err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	usedRefs := map[string]bool{}
	usedDigests := map[string]bool{}
	for _, c := range ctrs {
		usedRefs[c.Image] = true
		if m.cfg.ImageIDLabel != "" && c.Labels[m.cfg.ImageIDLabel] != "" {
			usedDigests[c.Labels[m.cfg.ImageIDLabel]] = true
		}
	}
	byDigest := map[string][]krt.Image{}
	for _, img := range imgs {
		key := img.Digest
		if key == "" {
			key = img.Ref
		}
		byDigest[key] = append(byDigest[key], img)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for digest, group := range byDigest {
		r, ok := m.images[digest]
		if !ok {
			r = &imageRecord{firstDetected: now}
			m.images[digest] = r
		}
		r.refs, r.size = r.refs[:0], 0
		used := usedDigests[digest]
		for _, img := range group {
			r.refs = append(r.refs, img.Ref)
			r.size = max(r.size, img.Size)
			used = used || usedRefs[img.Ref]
		}
		if used {
			r.lastUsed = now
		}
	}
	for digest := range m.images {
		if _, ok := byDigest[digest]; !ok {
			delete(m.images, digest)
		}
	}
	return nil
}

// candidate is an image that may be removed.
type candidate struct {
	digest string
	imageRecord
}

// candidates are the images not in use at now and at least minAge old,
// least recently used first (then first detected first), as the kubelet
// orders them.
func candidates(images map[string]*imageRecord, now time.Time, minAge time.Duration) []candidate {
	var out []candidate
	for d, r := range images {
		if !r.lastUsed.Before(now) { // in use at this detection
			continue
		}
		if now.Sub(r.firstDetected) < minAge {
			continue
		}
		out = append(out, candidate{digest: d, imageRecord: *r})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.lastUsed.Equal(b.lastUsed) {
			return a.lastUsed.Before(b.lastUsed)
		}
		if !a.firstDetected.Equal(b.firstDetected) {
			return a.firstDetected.Before(b.firstDetected)
		}
		return a.digest < b.digest
	})
	return out
}

// freeSpace removes candidates until bytes are freed.
func (m *Manager) freeSpace(ctx context.Context, bytes int64, now time.Time) (int64, error) {
	m.mu.Lock()
	cands := candidates(m.images, now, m.cfg.Policy.MinAge)
	m.mu.Unlock()
	var freed int64
	var errs []error
	for _, c := range cands {
		if freed >= bytes {
			break
		}
		var failed bool
		for _, ref := range c.refs {
			if err := m.cfg.Runtime.RemoveImage(ctx, ref); err != nil && !errors.Is(err, krt.ErrNotFound) {
				errs = append(errs, err)
				failed = true
			}
		}
		if failed {
			continue
		}
		m.cfg.Logger.Info("removed unused image", "image", c.refs, "digest", c.digest, "size", c.size, "lastUsed", c.lastUsed, "firstDetected", c.firstDetected)
		m.mu.Lock()
		delete(m.images, c.digest)
		m.mu.Unlock()
		freed += c.size
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", bytes, freed, errors.Join(errs...))
	}
	return freed, nil
}

func (m *Manager) event(reason, msg string) {
	if m.cfg.Recorder == nil || m.cfg.Node == nil {
		return
	}
	m.cfg.Recorder.Event(m.cfg.Node, corev1.EventTypeWarning, reason, msg)
}
