//go:build linux

package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/user"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// The image config's environment and working directory, and the process's
// user as the image and the pod's security context name it, set as
// containerd's oci.WithImageConfig, WithUser, WithUserID and
// WithAdditionalGIDs set them, with the same results (user_linux_test.go
// checks against them). Those read the image's /etc/passwd and /etc/group
// through containerd's fsview, which formats overlay mount options with
// text/template; a reachable template execution keeps the Go linker from
// dropping any exported method nothing calls, which made the skiff binary
// 138 MB instead of 96 and every skiff process's resident set ~14 MB
// larger. These mount the container's snapshot read-only instead, as
// containerd did before fsview, and read the files with containerd's own
// oci.UserFromFS and oci.GIDFromFS.

// defaultPath is the environment of an image whose config has none, as
// containerd and Docker give it.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// withImageEnvAndCwd sets the process's environment and working directory
// from the image config: its env under what the spec already has, and its
// working directory or /.
func withImageEnvAndCwd(config ocispec.ImageConfig) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		env := config.Env
		if len(env) == 0 {
			env = []string{defaultPath}
		}
		set := s.Process.Env
		s.Process.Env = slices.Clone(env)
		s.Process.Cwd = config.WorkingDir
		if s.Process.Cwd == "" {
			s.Process.Cwd = "/"
		}
		return oci.WithEnv(set)(ctx, cl, c, s)
	}
}

// withUser sets the process's user, group and supplementary groups from
// the image's USER and the pod's runAsUser and runAsGroup, reading the
// container's /etc/passwd and /etc/group.
func withUser(imageUser string, sec krt.Security) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		return withRootFS(ctx, cl, c, func(root fs.FS) error {
			u, err := resolveUser(root, s.Process.User, imageUser, sec)
			if err != nil {
				return err
			}
			s.Process.User = u
			return nil
		})
	}
}

// withRootFS runs fn on the container's root file system, mounted
// read-only in a temporary directory for the time.
func withRootFS(ctx context.Context, cl oci.Client, c *containers.Container, fn func(fs.FS) error) error {
	if c.Snapshotter == "" || c.SnapshotKey == "" {
		return errors.New("container has no root file system snapshot")
	}
	mounts, err := cl.SnapshotService(c.Snapshotter).Mounts(ctx, c.SnapshotKey)
	if err != nil {
		return fmt.Errorf("mounts of the container's root file system: %w", err)
	}
	return mount.WithReadonlyTempMount(ctx, mounts, func(dir string) error {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer root.Close()
		return fn(root.FS())
	})
}

// resolveUser is the process user u becomes: first the image's USER
// (oci.WithImageConfig: WithUser, then WithAdditionalGIDs of the user, or
// of root when the image names none), then the pod's runAsUser and
// runAsGroup (WithUIDGID, WithUserID, or the group alone).
func resolveUser(root fs.FS, u specs.User, imageUser string, sec krt.Security) (specs.User, error) {
	member := "root"
	if imageUser != "" {
		var err error
		if u.UID, u.GID, err = idsFromString(root, imageUser); err != nil {
			return u, err
		}
		if member, err = nameOf(root, u.UID); err != nil {
			return u, err
		}
	}
	groups, err := supplementaryGroups(root, member)
	if err != nil {
		return u, err
	}
	// The primary group first unless listed (containerd's
	// ensureAdditionalGids).
	if !slices.Contains(groups, u.GID) {
		groups = append([]uint32{u.GID}, groups...)
	}
	u.AdditionalGids = groups
	switch {
	case sec.RunAsUser != nil && sec.RunAsGroup != nil:
		u.UID, u.GID = uint32(*sec.RunAsUser), uint32(*sec.RunAsGroup)
		u.AdditionalGids = []uint32{u.GID}
	case sec.RunAsUser != nil:
		// The group is the image's for that user, else 0, as on Kubernetes.
		if u.UID, u.GID, err = idsFromUID(root, uint32(*sec.RunAsUser)); err != nil {
			return u, err
		}
		u.AdditionalGids = []uint32{u.GID}
	case sec.RunAsGroup != nil:
		u.GID = uint32(*sec.RunAsGroup)
	}
	return u, nil
}

// idsFromString resolves an image's USER: "uid", "name", "uid:gid",
// "name:group" or a mix (oci.WithUser).
func idsFromString(root fs.FS, s string) (uid, gid uint32, err error) {
	parts := strings.Split(s, ":")
	if len(parts) > 2 {
		return 0, 0, fmt.Errorf("invalid USER value %s", s)
	}
	uid, uidName, err := parseID(parts[0])
	if err != nil {
		return 0, 0, fmt.Errorf("invalid USER value %q: uid %w", s, err)
	}
	if len(parts) == 1 {
		if uidName {
			return idsFromName(root, parts[0])
		}
		return idsFromUID(root, uid)
	}
	gid, gidName, err := parseID(parts[1])
	if err != nil {
		return 0, 0, fmt.Errorf("invalid USER value %q: gid %w", s, err)
	}
	// An empty name ("":100) is ID 0, not looked up, as in containerd.
	if uidName && parts[0] != "" {
		if uid, _, err = idsFromName(root, parts[0]); err != nil {
			return 0, 0, err
		}
	}
	if gidName && parts[1] != "" {
		if gid, err = oci.GIDFromFS(root, func(g user.Group) bool { return g.Name == parts[1] }); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

// parseID reads a numeric user or group ID; isName is true when s is not
// a number (a name to look up).
func parseID(s string) (id uint32, isName bool, err error) {
	v, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, false, errors.New("out of range")
	case err != nil:
		return 0, true, nil
	case v < 0 || v > math.MaxInt32:
		// runc takes IDs up to MaxInt32 only.
		return 0, false, errors.New("out of range")
	}
	return uint32(v), false, nil
}

// idsFromUID is uid and its group from /etc/passwd, or group 0 when the
// file or the user is missing (oci.WithUserID).
func idsFromUID(root fs.FS, uid uint32) (uint32, uint32, error) {
	usr, err := oci.UserFromFS(root, func(x user.User) bool { return x.Uid == int(uid) })
	switch {
	case missing(err):
		return uid, 0, nil
	case err != nil:
		return 0, 0, err
	}
	return uint32(usr.Uid), uint32(usr.Gid), nil
}

// idsFromName is the named user and its group from /etc/passwd, which must
// list it (oci.WithUsername).
func idsFromName(root fs.FS, name string) (uint32, uint32, error) {
	usr, err := oci.UserFromFS(root, func(x user.User) bool { return x.Name == name })
	if err != nil {
		return 0, 0, err
	}
	return uint32(usr.Uid), uint32(usr.Gid), nil
}

// nameOf is the name /etc/passwd gives uid, "" when the file or the user is
// missing (then the user has no supplementary groups).
func nameOf(root fs.FS, uid uint32) (string, error) {
	usr, err := oci.UserFromFS(root, func(x user.User) bool { return x.Uid == int(uid) })
	if missing(err) {
		return "", nil
	}
	return usr.Name, err
}

// missing is true of a lookup that found no /etc/passwd or no such user.
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, oci.ErrNoUsersFound)
}

// supplementaryGroups are the groups /etc/group lists name in, but for one
// named as the user (oci.WithAdditionalGIDs); none when the name is empty
// or the file missing.
func supplementaryGroups(root fs.FS, name string) ([]uint32, error) {
	if name == "" {
		return nil, nil
	}
	// GIDFromFS finds one group; its filter sees each, and collects them
	// all (it opens the file as containerd does, symbolic links resolved
	// inside the root).
	var gids []uint32
	_, err := oci.GIDFromFS(root, func(g user.Group) bool {
		if g.Name != name && slices.Contains(g.List, name) {
			gids = append(gids, uint32(g.Gid))
		}
		return false
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil && !errors.Is(err, oci.ErrNoGroupsFound):
		return nil, err
	}
	return gids, nil
}
