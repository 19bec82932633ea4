//go:build linux

package eviction

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeSourceMeasuresThisMachine measures the machine the test runs on
// and checks the values against what the kernel says by other means.
func TestNodeSourceMeasuresThisMachine(t *testing.T) {
	dir := t.TempDir()
	src := NodeSource{NodeFsDir: dir, ImageFsDir: dir, CgroupRoot: "/skiff"}
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	meminfo, err := readKeyValues("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	mem, ok := obs[SignalMemoryAvailable]
	if !ok || mem.Capacity != meminfo["MemTotal"] {
		t.Fatalf("memory %+v, MemTotal %d", mem, meminfo["MemTotal"])
	}
	// The working set is at least what is in use outside the page cache
	// and at most what is not free: available lies between MemFree and
	// MemTotal (with some slack, the two are read at different moments).
	slack := int64(64 << 20)
	if mem.Available < meminfo["MemFree"]-slack || mem.Available > mem.Capacity {
		t.Errorf("memory.available %d outside [MemFree %d, MemTotal %d]", mem.Available, meminfo["MemFree"], mem.Capacity)
	}
	t.Logf("memory.available %d MiB of %d MiB (MemAvailable %d MiB)", mem.Available>>20, mem.Capacity>>20, meminfo["MemAvailable"]>>20)

	for _, s := range []Signal{SignalNodeFsAvailable, SignalImageFsAvailable} {
		o := obs[s]
		if o.Capacity <= 0 || o.Available <= 0 || o.Available > o.Capacity {
			t.Errorf("%s %+v", s, o)
		}
	}
	if o := obs[SignalNodeFsInodesFree]; o.Capacity > 0 && (o.Available <= 0 || o.Available > o.Capacity) {
		t.Errorf("inodes %+v", o)
	}
	pid := obs[SignalPIDAvailable]
	pidMax, _ := readInt("/proc/sys/kernel/pid_max")
	if pid.Capacity <= 0 || pid.Capacity > pidMax || pid.Available <= 0 || pid.Available >= pid.Capacity {
		t.Errorf("pid.available %+v (pid_max %d)", pid, pidMax)
	}

	// Filling the disk by 8 MiB lowers nodefs.available by about as much.
	// The disk is shared with whatever else runs (go test runs packages in
	// parallel, and they write and delete files too), so one measurement
	// can be swamped: the write must show in one of a few tries.
	var drops []int64
	for try := 0; try < 5; try++ {
		fill := filepath.Join(dir, "fill")
		before, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fill, make([]byte, 8<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(fill)
		_ = f.Sync()
		f.Close()
		after, err := src.Observe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		drop := before[SignalNodeFsAvailable].Available - after[SignalNodeFsAvailable].Available
		if drop >= 4<<20 {
			return
		}
		drops = append(drops, drop)
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
	}
	t.Errorf("writing 8 MiB lowered nodefs.available by %v bytes in 5 tries", drops)
}

// TestPodUsageReadsCgroupsAndDisk reads a pod's directories and the cgroup
// of a container; the cgroup here is the root cgroup, which always exists.
func TestPodUsageReadsCgroupsAndDisk(t *testing.T) {
	podDir, logDir := t.TempDir(), t.TempDir()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "c", ContainerID: "containerd://x", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(podDir, "u1", "volumes"), 0o755))
	must(os.WriteFile(filepath.Join(podDir, "u1", "volumes", "data"), make([]byte, 1<<20), 0o600))
	must(os.MkdirAll(filepath.Join(logDir, "ns_p_u1", "c"), 0o755))
	must(os.WriteFile(filepath.Join(logDir, "ns_p_u1", "c", "0.log"), make([]byte, 1<<20), 0o600))
	// A hard link is counted once.
	must(os.Link(filepath.Join(podDir, "u1", "volumes", "data"), filepath.Join(podDir, "u1", "link")))
	src := NodeSource{PodDir: podDir, LogDir: logDir, CgroupRoot: "/no-such-root"}
	u := src.PodUsage(context.Background(), p)
	if u.Disk < 2<<20 || u.Disk > 3<<20 {
		t.Errorf("disk %d, want about 2 MiB", u.Disk)
	}
	if len(u.Memory) != 0 || u.Processes != 0 {
		t.Errorf("a pod without cgroups uses memory %v, processes %d", u.Memory, u.Processes)
	}
	ws, err := src.cgroupWorkingSet("/")
	if src.unified() {
		// cgroup v2's root has no memory.current.
		if err == nil {
			t.Errorf("v2 root working set %d without memory.current", ws)
		}
		return
	}
	if err != nil || ws <= 0 {
		t.Errorf("root cgroup working set %d, %v", ws, err)
	}
}
