//go:build linux

package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/skiffkube/skiff/kubelet/nodetest"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// runc 1.1 lists "rro" among its mount options (`runc features`); the
// kernel needs mount_setattr(2), Linux 5.12. Both are needed.
func TestRecursiveReadOnlySupport(t *testing.T) {
	withRRO := []byte(`{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro","rro","rrw"]}`)
	withoutRRO := []byte(`{"ociVersionMin":"1.0.0","mountOptions":["bind","rbind","ro"]}`)
	cases := []struct {
		name     string
		kernel   string
		features []byte
		want     bool
	}{
		{"runc with rro on Linux 6.18", "6.18.44-fc-v1252", withRRO, true},
		{"runc with rro on Linux 5.12", "5.12.0", withRRO, true},
		{"runc with rro on Linux 5.11", "5.11.22-generic", withRRO, false},
		{"runc without rro", "6.1.0-18-amd64", withoutRRO, false},
		{"runc without `features` (before 1.1)", "6.1.0-18-amd64", nil, false},
		{"unreadable features", "6.1.0", []byte("Incorrect Usage"), false},
		{"unreadable kernel release", "", withRRO, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := recursiveReadOnlySupport(tc.kernel, tc.features)
			if got != tc.want || why == "" {
				t.Errorf("recursiveReadOnlySupport(%q, %s) = %v, %q; want %v with a reason", tc.kernel, tc.features, got, why, tc.want)
			}
		})
	}
}

// A recursively read-only mount is runc's "rro" on top of "ro"; asked of
// a runtime that cannot make one, it is refused rather than weakened.
func TestBindOptions(t *testing.T) {
	cases := []struct {
		name string
		m    krt.Mount
		rro  bool
		want []string
	}{
		{"writable", krt.Mount{}, true, []string{"rbind", "rprivate", "rw"}},
		{"read-only", krt.Mount{ReadOnly: true}, false, []string{"rbind", "rprivate", "ro"}},
		{"recursively read-only", krt.Mount{ReadOnly: true, RecursiveReadOnly: true}, true, []string{"rbind", "rprivate", "ro", "rro"}},
	}
	for _, tc := range cases {
		got, err := bindOptions(tc.m, tc.rro)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: options %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := bindOptions(krt.Mount{ReadOnly: true, RecursiveReadOnly: true}, false); !errors.Is(err, krt.ErrInvalidConfig) {
		t.Errorf("recursively read-only without support: err = %v, want ErrInvalidConfig", err)
	}
	if _, err := bindOptions(krt.Mount{RecursiveReadOnly: true}, true); !errors.Is(err, krt.ErrInvalidConfig) {
		t.Errorf("recursively read-only but writable: err = %v, want ErrInvalidConfig", err)
	}
}

// A read-only bind of a directory with a file system mounted below it:
// plain read-only leaves that file system writable in the container;
// recursively read-only (where runc and the kernel can) does not.
func TestRecursiveReadOnlyMountCoversSubmounts(t *testing.T) {
	r := newTestRuntime(t)
	if !r.RecursiveReadOnlyMounts() {
		_, why := detectRecursiveReadOnly(context.Background())
		if nodetest.InCI() {
			// CI's machines (Debian's runc 1.1, Linux 6) have them: nothing may skip there.
			t.Fatalf("recursive read-only mounts unsupported: %s", why)
		}
		t.Skipf("recursive read-only mounts unsupported here: %s", why)
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs below the volume: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })

	p := newPod(t, r)
	for i, tc := range []struct {
		name string
		rro  bool
		code int
	}{
		{"read-only leaves the submount writable", false, 0},
		{"recursively read-only covers the submount", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.config(fmt.Sprintf("rro%d", i), "sleep")
			cfg.Mounts = []krt.Mount{{HostPath: dir, ContainerPath: "/vol", ReadOnly: true, RecursiveReadOnly: tc.rro}}
			id := p.run(cfg)
			waitState(t, r, id, krt.StateRunning)
			if out, errOut, code := exec(t, r, id, nil, "/app", "touch", "/vol/top"); code == 0 {
				t.Errorf("writing the read-only mount itself: %q %q, want refused", out, errOut)
			}
			out, errOut, code := exec(t, r, id, nil, "/app", "touch", fmt.Sprintf("/vol/sub/f%d", i))
			if code != tc.code {
				t.Errorf("writing below it: stdout %q stderr %q code %d, want code %d", out, errOut, code, tc.code)
			}
		})
	}
}
