// Package eviction is the node agent's eviction manager, as the kubelet's:
// it measures what the node has left (memory, the agent's and the images'
// file systems, inodes, process IDs), compares it with the hard eviction
// thresholds (--eviction-hard), reports the node conditions MemoryPressure,
// DiskPressure and PIDPressure, and when a threshold is crossed first asks
// a Reclaimer to free node-level resources (disk), then fails one pod per
// pass, ranked as the kubelet ranks them, with reason Evicted. While a
// condition holds, Admit refuses new pods as the kubelet's admission does.
//
// What is measured, and how (NodeSource, Linux):
//   - memory.available = MemTotal − working set, the working set being the
//     root cgroup's usage minus its inactive file pages (cgroup v1:
//     memory/memory.usage_in_bytes − total_inactive_file; cgroup v2, whose
//     root has no memory.current: MemTotal − MemFree − inactive_file of the
//     root memory.stat), as cAdvisor computes it for the kubelet; when the
//     cgroup files cannot be read, /proc/meminfo's MemAvailable.
//   - nodefs.available, nodefs.inodesFree: statfs of the agent's data
//     directory (blocks and inodes available to unprivileged users).
//   - imagefs.available, imagefs.inodesFree: statfs of containerd's root
//     (/var/lib/containerd by default).
//   - pid.available = min(kernel.pid_max, kernel.threads-max) − the number
//     of tasks the kernel counts (sysinfo procs).
//
// Pods' usage for ranking: the memory working set of each container's cgroup
// (<cgroup root>/pod<uid>/<container id>, as the containerd runtime makes
// them), the bytes under the pod's directory and log directory, and the
// processes in the pod's cgroup.
package eviction
