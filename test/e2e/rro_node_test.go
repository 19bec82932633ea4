package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// `recursiveReadOnly: Enabled` on real containerd: the node reports its
// default runtime handler with recursive read-only mounts (runc 1.1 and a
// kernel of 5.12 or later, as here), the pod runs, a file system mounted
// below the volume's directory is read-only in the container too, and the
// container status says Enabled.
func TestRecursiveReadOnlyMountOnRealContainerd(t *testing.T) {
	_, k := startNodeServer(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs below the volume: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })

	waitFor(t, k, 90*time.Second, "the node's runtime handler", func(out string) bool { return out == "true" },
		"get", "node", nodeName, "-o", `jsonpath={.status.runtimeHandlers[?(@.name=="")].features.recursiveReadOnlyMounts}`)
	k.okIn(podManifest("rro", `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["sleep"]
    volumeMounts: [{name: host, mountPath: /vol, readOnly: true, recursiveReadOnly: Enabled}]
  volumes: [{name: host, hostPath: {path: `+dir+`}}]
`), "apply", "-f", "-")
	waitFor(t, k, 90*time.Second, "rro Running", func(out string) bool { return out == "Running" }, "get", "pod", "rro", "-o", "jsonpath={.status.phase}")
	if got := k.ok("get", "pod", "rro", "-o", "jsonpath={.status.containerStatuses[0].volumeMounts[0].recursiveReadOnly}"); got != "Enabled" {
		t.Errorf("the mount's status recursiveReadOnly %q, want Enabled", got)
	}
	contains(t, "writing below the read-only volume", k.fails("", "exec", "rro", "--", "/app", "touch", "/vol/sub/f"), "read-only file system")
	k.ok("delete", "pod", "rro", "--timeout=60s")
}
