//go:build linux

package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// containerdUser is the user containerd's own options give: what
// oci.WithImageConfig does with the image's USER, then the options
// specOpts used for the pod's runAsUser and runAsGroup before withUser.
// They read dir directly (a container with no snapshot and an absolute
// root path), which needs no mount.
func containerdUser(dir, imageUser string, sec krt.Security) (specs.User, error) {
	ctx := context.Background()
	c := &containers.Container{}
	s := &oci.Spec{Process: &specs.Process{}, Root: &specs.Root{Path: dir}, Linux: &specs.Linux{}}
	run := func(opts ...oci.SpecOpts) error {
		for _, o := range opts {
			if err := o(ctx, nil, c, s); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if imageUser != "" {
		if err = run(oci.WithUser(imageUser)); err == nil {
			err = run(oci.WithAdditionalGIDs(strconv.FormatUint(uint64(s.Process.User.UID), 10)))
		}
	} else {
		err = run(oci.WithAdditionalGIDs("root"))
	}
	if err != nil {
		return specs.User{}, err
	}
	switch {
	case sec.RunAsUser != nil && sec.RunAsGroup != nil:
		err = run(oci.WithUIDGID(uint32(*sec.RunAsUser), uint32(*sec.RunAsGroup)))
	case sec.RunAsUser != nil:
		err = run(oci.WithUserID(uint32(*sec.RunAsUser)))
	case sec.RunAsGroup != nil:
		s.Process.User.GID = uint32(*sec.RunAsGroup)
	}
	return s.Process.User, err
}

// TestResolveUserAsContainerd checks resolveUser against containerd's
// options on root file systems with and without /etc/passwd and
// /etc/group, for image USER values of every form and the pod's
// runAsUser and runAsGroup.
func TestResolveUserAsContainerd(t *testing.T) {
	const passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/:/bin/false\n" +
		"app:x:1000:1000:app:/home/app:/bin/sh\n" +
		"web:x:1001:2000:web:/srv:/bin/sh\n"
	const group = "root:x:0:\n" +
		"wheel:x:10:root\n" +
		"adm:x:4:root,daemon\n" +
		"app:x:1000:app\n" + // named as the user: not a supplementary group
		"web:x:2000:\n" +
		"staff:x:50:app,web\n" +
		"audio:x:63:app\n" +
		"web2:x:3000:web\n"
	roots := map[string]map[string]string{
		"passwd and group": {"etc/passwd": passwd, "etc/group": group},
		"passwd alone":     {"etc/passwd": passwd},
		"neither":          {},
		// /etc/passwd an absolute link, resolved inside the root.
		"linked passwd": {"usr/lib/passwd": passwd, "etc/group": group, "etc/passwd": "->/usr/lib/passwd"},
	}
	imageUsers := []string{"", "app", "1000", "1001", "4242", "0", "nobody", "app:staff", "1000:50", "web:4000",
		"app:nogroup", "missing", "missing:50", ":100", "app:", "1:2:3", "-1", "2147483648", "99999999999999999999", "web:web2"}
	id := func(v int64) *int64 { return &v }
	secs := map[string]krt.Security{
		"no security context": {},
		"runAsUser listed":    {RunAsUser: id(1001)},
		"runAsUser unlisted":  {RunAsUser: id(4242)},
		"runAsUser and group": {RunAsUser: id(1000), RunAsGroup: id(77)},
		"runAsGroup alone":    {RunAsGroup: id(88)},
	}
	for rootName, files := range roots {
		dir := t.TempDir()
		for name, content := range files {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if target, ok := strings.CutPrefix(content, "->"); ok {
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		for secName, sec := range secs {
			for _, imageUser := range imageUsers {
				t.Run(fmt.Sprintf("%s/%s/USER=%q", rootName, secName, imageUser), func(t *testing.T) {
					want, wantErr := containerdUser(dir, imageUser, sec)
					got, err := resolveUser(root.FS(), specs.User{}, imageUser, sec)
					if (err != nil) != (wantErr != nil) {
						t.Fatalf("error %v, containerd's %v", err, wantErr)
					}
					if err != nil {
						return
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("user %+v, containerd's %+v", got, want)
					}
				})
			}
		}
	}
}
