package eviction

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Source measures the node and its pods. NodeSource is the real one.
type Source interface {
	// Observe measures every signal it can; a signal it cannot measure is
	// left out (and its thresholds are never met).
	Observe(ctx context.Context) (Observations, error)
	// PodUsage measures one pod, for ranking.
	PodUsage(ctx context.Context, pod *corev1.Pod) PodUsage
}

// PodUsage is what one pod uses of the starved resources.
type PodUsage struct {
	// Memory is each running container's working set in bytes, by name.
	Memory map[string]int64
	// Disk is the bytes the pod writes on the node's file system (its
	// volumes directory and its logs).
	Disk int64
	// Processes counts the processes (tasks) in the pod's cgroup.
	Processes int64
}

// MemoryTotal is the sum of the containers' working sets.
func (u PodUsage) MemoryTotal() int64 {
	var n int64
	for _, v := range u.Memory {
		n += v
	}
	return n
}

// parseKeyValues reads "key value [unit]" lines (/proc/meminfo with its
// "Key:" colons, memory.stat) into a map; kB values are turned into bytes.
func parseKeyValues(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", sc.Text(), err)
		}
		if len(f) == 3 && f[2] == "kB" {
			n *= 1024
		}
		out[strings.TrimSuffix(f[0], ":")] = n
	}
	return out, sc.Err()
}

// memoryFromCgroup computes memory.available from the root cgroup: the
// working set is usage minus inactive file pages (which the kernel reclaims
// first), and what is available is the machine's total minus it, floored at
// 0. inactive is the v1 total_inactive_file or the v2 inactive_file.
func memoryFromCgroup(total, usage int64, stat map[string]int64) (Observation, error) {
	inactive, ok := stat["total_inactive_file"]
	if !ok {
		inactive, ok = stat["inactive_file"]
	}
	if !ok {
		return Observation{}, fmt.Errorf("memory.stat has no inactive_file")
	}
	return Observation{Available: max(total-workingSet(usage, inactive), 0), Capacity: total}, nil
}

// workingSet is usage minus inactive file pages, floored at 0, as cAdvisor.
func workingSet(usage, inactiveFile int64) int64 {
	return max(usage-inactiveFile, 0)
}

// pidObservation: the limit is the smaller of pid_max and threads-max (each
// thread takes a PID), available is that minus the tasks running.
func pidObservation(pidMax, threadsMax, running int64) Observation {
	limit := pidMax
	if threadsMax > 0 && threadsMax < limit {
		limit = threadsMax
	}
	return Observation{Available: max(limit-running, 0), Capacity: limit}
}

// parseInt reads a file's single integer ("max" is not one).
func parseInt(b []byte) (int64, error) {
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
