//go:build linux

package containerd

import (
	"context"
	"encoding/json"
	"fmt"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// RecursiveReadOnlyMounts says whether this runtime makes read-only
// mounts that ask for it recursively read-only (krt.RecursiveReadOnlyMounts),
// as detected when it started.
func (r *Runtime) RecursiveReadOnlyMounts() bool { return r.rro }

// detectRecursiveReadOnly asks the runc that containerd's runc shim runs
// (the first on PATH, where the shim looks) for its features, and the
// kernel for its release. A runc that cannot answer (before 1.1) has no
// "rro".
func detectRecursiveReadOnly(ctx context.Context) (bool, string) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false, fmt.Sprintf("uname: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	features, err := osexec.CommandContext(ctx, "runc", "features").Output()
	if err != nil {
		features = nil
	}
	return recursiveReadOnlySupport(unix.ByteSliceToString(uts.Release[:]), features)
}

// recursiveReadOnlySupport decides from the kernel release and the output
// of `runc features` whether a bind mount can be made recursively
// read-only, and says why. runc does it with the "rro" mount option
// (since 1.1, which lists it in `runc features`) through
// mount_setattr(2), which Linux has since 5.12 — the same two checks as
// containerd's CRI plugin before it reports the feature to the kubelet.
func recursiveReadOnlySupport(kernelRelease string, runcFeatures []byte) (bool, string) {
	major, minor, ok := kernelVersion(kernelRelease)
	if !ok {
		return false, fmt.Sprintf("kernel release %q unreadable", kernelRelease)
	}
	if major < 5 || major == 5 && minor < 12 {
		return false, fmt.Sprintf("kernel %s has no mount_setattr(2) (needs 5.12)", kernelRelease)
	}
	if runcFeatures == nil {
		return false, "`runc features` failed (runc before 1.1 has no recursive read-only mounts)"
	}
	var f struct {
		MountOptions []string `json:"mountOptions"`
	}
	if err := json.Unmarshal(runcFeatures, &f); err != nil {
		return false, fmt.Sprintf("`runc features` unreadable: %v", err)
	}
	if !slices.Contains(f.MountOptions, "rro") {
		return false, "runc does not list the rro mount option"
	}
	return true, fmt.Sprintf("runc has the rro mount option and kernel %s has mount_setattr(2)", kernelRelease)
}

// kernelVersion reads the major and minor numbers of a release such as
// "6.1.0-18-amd64".
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}

// bindOptions are the OCI mount options of a bind mount: recursive and
// private, read-only or not, and recursively read-only ("rro", on top of
// "ro", as containerd's CRI plugin writes it) when asked and possible.
// Asked when not possible, it is refused: a plain read-only mount in its
// place would leave submounts writable without a word.
func bindOptions(m krt.Mount, rroSupported bool) ([]string, error) {
	options := []string{"rbind", "rprivate"}
	if !m.ReadOnly {
		if m.RecursiveReadOnly {
			return nil, fmt.Errorf("%w: mount %q: recursively read-only but not read-only", krt.ErrInvalidConfig, m.ContainerPath)
		}
		return append(options, "rw"), nil
	}
	options = append(options, "ro")
	if m.RecursiveReadOnly {
		if !rroSupported {
			return nil, fmt.Errorf("%w: mount %q: recursive read-only mounts are not supported by this runtime", krt.ErrInvalidConfig, m.ContainerPath)
		}
		options = append(options, "rro")
	}
	return options, nil
}
