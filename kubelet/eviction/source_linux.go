//go:build linux

package eviction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// DefaultImageFsDir is containerd's root, where image layers and snapshots live.
const DefaultImageFsDir = "/var/lib/containerd"

// NodeSource measures this machine (see the package comment).
type NodeSource struct {
	// NodeFsDir is the agent's data directory (nodefs).
	NodeFsDir string
	// ImageFsDir is containerd's root (imagefs); default /var/lib/containerd.
	ImageFsDir string
	// CgroupRoot is the pods' cgroup parent (/skiff).
	CgroupRoot string
	// PodDir holds each pod's directory (<PodDir>/<uid>), LogDir its logs
	// (<LogDir>/<namespace>_<name>_<uid>).
	PodDir, LogDir string
	// CgroupMount defaults to /sys/fs/cgroup; ProcDir to /proc.
	CgroupMount, ProcDir string
}

func (s NodeSource) cgroupMount() string {
	if s.CgroupMount != "" {
		return s.CgroupMount
	}
	return "/sys/fs/cgroup"
}

func (s NodeSource) proc(name string) string {
	dir := s.ProcDir
	if dir == "" {
		dir = "/proc"
	}
	return filepath.Join(dir, name)
}

// unified reports whether the cgroup mount is cgroup v2 only.
func (s NodeSource) unified() bool {
	var st unix.Statfs_t
	return unix.Statfs(s.cgroupMount(), &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// memoryDir is where a cgroup's memory files are.
func (s NodeSource) memoryDir(cgroup string) string {
	if s.unified() {
		return filepath.Join(s.cgroupMount(), cgroup)
	}
	return filepath.Join(s.cgroupMount(), "memory", cgroup)
}

// Observe measures memory, nodefs, imagefs and PIDs. Errors of one signal
// are joined; the others are still returned.
func (s NodeSource) Observe(context.Context) (Observations, error) {
	obs := Observations{}
	var errs []error
	if o, err := s.memory(); err != nil {
		errs = append(errs, fmt.Errorf("memory.available: %w", err))
	} else {
		obs[SignalMemoryAvailable] = o
	}
	for _, fsys := range []struct {
		dir           string
		bytes, inodes Signal
	}{
		{s.NodeFsDir, SignalNodeFsAvailable, SignalNodeFsInodesFree},
		{s.imageFsDir(), SignalImageFsAvailable, SignalImageFsInodesFree},
	} {
		if fsys.dir == "" {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(fsys.dir, &st); err != nil {
			errs = append(errs, fmt.Errorf("%s: statfs %s: %w", fsys.bytes, fsys.dir, err))
			continue
		}
		obs[fsys.bytes] = Observation{Available: int64(st.Bavail) * st.Bsize, Capacity: int64(st.Blocks) * st.Bsize}
		if st.Files > 0 { // some file systems (btrfs) report no inode counts
			obs[fsys.inodes] = Observation{Available: int64(st.Ffree), Capacity: int64(st.Files)}
		}
	}
	if o, err := s.pids(); err != nil {
		errs = append(errs, fmt.Errorf("pid.available: %w", err))
	} else {
		obs[SignalPIDAvailable] = o
	}
	return obs, errors.Join(errs...)
}

func (s NodeSource) imageFsDir() string {
	if s.ImageFsDir != "" {
		return s.ImageFsDir
	}
	return DefaultImageFsDir
}

// memory is MemTotal minus the root cgroup's working set; MemAvailable
// when the cgroup files are unreadable.
func (s NodeSource) memory() (Observation, error) {
	f, err := os.Open(s.proc("meminfo"))
	if err != nil {
		return Observation{}, err
	}
	meminfo, err := parseKeyValues(f)
	f.Close()
	if err != nil {
		return Observation{}, fmt.Errorf("meminfo: %w", err)
	}
	total := meminfo["MemTotal"]
	if total <= 0 {
		return Observation{}, errors.New("meminfo has no MemTotal")
	}
	if o, err := s.memoryFromRootCgroup(total, meminfo); err == nil {
		return o, nil
	}
	avail, ok := meminfo["MemAvailable"]
	if !ok {
		return Observation{}, errors.New("neither the root cgroup nor meminfo's MemAvailable can be read")
	}
	return Observation{Available: avail, Capacity: total}, nil
}

func (s NodeSource) memoryFromRootCgroup(total int64, meminfo map[string]int64) (Observation, error) {
	dir := s.memoryDir("/")
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return Observation{}, err
	}
	var usage int64
	if b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes")); err == nil { // v1
		if usage, err = parseInt(b); err != nil {
			return Observation{}, err
		}
	} else {
		// cgroup v2's root has no memory.current: usage is what the
		// machine does not have free, as runc reports it for the root.
		usage = total - meminfo["MemFree"]
	}
	return memoryFromCgroup(total, usage, stat)
}

func readKeyValues(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kv, err := parseKeyValues(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kv, nil
}

func (s NodeSource) pids() (Observation, error) {
	pidMax, err := readInt(s.proc("sys/kernel/pid_max"))
	if err != nil {
		return Observation{}, err
	}
	threadsMax, _ := readInt(s.proc("sys/kernel/threads-max"))
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return Observation{}, fmt.Errorf("sysinfo: %w", err)
	}
	return pidObservation(pidMax, threadsMax, int64(info.Procs)), nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := parseInt(b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// PodUsage measures a pod's containers' working sets (their cgroups,
// found from the container IDs in its status), its disk bytes and its
// processes. What cannot be read counts as 0.
func (s NodeSource) PodUsage(_ context.Context, pod *corev1.Pod) PodUsage {
	u := PodUsage{Memory: map[string]int64{}}
	podCgroup := s.CgroupRoot + "/pod" + string(pod.UID)
	for _, st := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		_, id, ok := strings.Cut(st.ContainerID, "://")
		if !ok || st.State.Running == nil {
			continue
		}
		if ws, err := s.cgroupWorkingSet(podCgroup + "/" + id); err == nil {
			u.Memory[st.Name] = ws
		}
	}
	if s.PodDir != "" {
		u.Disk += du(filepath.Join(s.PodDir, string(pod.UID)))
	}
	if s.LogDir != "" {
		u.Disk += du(filepath.Join(s.LogDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)))
	}
	u.Processes = s.cgroupTasks(podCgroup)
	return u
}

// cgroupWorkingSet is a cgroup's memory usage minus its inactive file pages.
func (s NodeSource) cgroupWorkingSet(cgroup string) (int64, error) {
	dir := s.memoryDir(cgroup)
	usageFile := "memory.usage_in_bytes"
	if s.unified() {
		usageFile = "memory.current"
	}
	b, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, err
	}
	usage, err := parseInt(b)
	if err != nil {
		return 0, err
	}
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	inactive, ok := stat["total_inactive_file"]
	if !ok {
		inactive = stat["inactive_file"]
	}
	return workingSet(usage, inactive), nil
}

// cgroupTasks counts the tasks in a cgroup and below (pids.current).
func (s NodeSource) cgroupTasks(cgroup string) int64 {
	dir := filepath.Join(s.cgroupMount(), "pids", cgroup)
	if s.unified() {
		dir = filepath.Join(s.cgroupMount(), cgroup)
	}
	n, _ := readInt(filepath.Join(dir, "pids.current"))
	return n
}

// du sums the sizes of the regular files under dir, counting each
// hard-linked file once.
func du(dir string) int64 {
	var total int64
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
			total += st.Blocks * 512
			return nil
		}
		total += info.Size()
		return nil
	})
	return total
}
