//go:build linux

package containerd

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupFS reads and removes cgroups on either cgroup version. runc creates
// and removes a container's own cgroup; the pod-level parents are the
// agent's to remove, in every v1 hierarchy.
type cgroupFS struct {
	mount   string // /sys/fs/cgroup
	unified bool   // cgroup v2 only
}

func detectCgroupFS() (cgroupFS, error) {
	const mount = "/sys/fs/cgroup"
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil {
		return cgroupFS{}, fmt.Errorf("containerd: cgroup file system at %s: %w", mount, err)
	}
	return cgroupFS{mount: mount, unified: st.Type == unix.CGROUP2_SUPER_MAGIC}, nil
}

// hierarchies are the directories a cgroup path lives under.
func (c cgroupFS) hierarchies() ([]string, error) {
	if c.unified {
		return []string{c.mount}, nil
	}
	entries, err := os.ReadDir(c.mount)
	if err != nil {
		return nil, fmt.Errorf("containerd: list cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		// Co-mounted controllers appear as symlinks (cpu -> cpu,cpuacct);
		// the real directory is listed too, so symlinks are skipped.
		if e.IsDir() {
			out = append(out, filepath.Join(c.mount, e.Name()))
		}
	}
	return out, nil
}

// oomKills returns how many processes the kernel OOM killer killed in the
// cgroup at path (0 when the cgroup or the counter is missing).
func (c cgroupFS) oomKills(path string) int {
	file := filepath.Join(c.mount, "memory", path, "memory.oom_control")
	if c.unified {
		file = filepath.Join(c.mount, path, "memory.events")
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && fields[0] == "oom_kill" {
			n, _ := strconv.Atoi(fields[1])
			return n
		}
	}
	return 0
}

// exists reports whether the cgroup path exists in any hierarchy.
func (c cgroupFS) exists(path string) bool {
	hs, err := c.hierarchies()
	if err != nil {
		return false
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, path)); err == nil {
			return true
		}
	}
	return false
}

// remove deletes the cgroup path and everything below it in every
// hierarchy, deepest first (a cgroup directory goes with rmdir only, and only
// once it has no children and no processes).
func (c cgroupFS) remove(path string) error {
	if path == "" || path == "/" {
		return errors.New("containerd: refusing to remove the root cgroup")
	}
	hs, err := c.hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		top := filepath.Join(h, path)
		var dirs []string
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("containerd: remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
