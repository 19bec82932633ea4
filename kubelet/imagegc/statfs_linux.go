package imagegc

import "golang.org/x/sys/unix"

func statFS(path string) (FSStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FSStats{}, err
	}
	bs := int64(st.Bsize)
	return FSStats{Capacity: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs}, nil
}
