package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// Data on a local-path volume outlives its pod on real containerd: a pod
// writes to its claim, is deleted, and a new pod on the same claim reads it
// back; deleting the claim deletes the volume and the agent then removes its
// directory.
func TestPersistentVolumeDataSurvivesPods(t *testing.T) {
	s, k := startNodeServer(t)
	k.okIn(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
`, "apply", "-f", "-")
	podWith := func(name string) string {
		return podManifest(name, `  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: `+testimage.Ref+`
    args: ["sleep"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
`)
	}
	k.okIn(podWith("writer"), "apply", "-f", "-")
	waitFor(t, k, 90*time.Second, "writer Running", func(out string) bool { return out == "Running" }, "get", "pod", "writer", "-o", "jsonpath={.status.phase}")

	pv := k.ok("get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}")
	dir := filepath.Join(s.dataDir, "agent", "storage", pv)
	if got := k.ok("get", "pv", pv, "-o", "jsonpath={.spec.local.path} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}"); got != dir+" "+nodeName {
		t.Fatalf("volume path and node %q, want %q", got, dir+" "+nodeName)
	}
	k.ok("exec", "writer", "--", "/app", "write", "/data/greeting", "hello from the first pod")
	if b, err := os.ReadFile(filepath.Join(dir, "greeting")); err != nil || strings.TrimSpace(string(b)) != "hello from the first pod" {
		t.Fatalf("on the node, %s/greeting: %q %v", dir, b, err)
	}

	k.ok("delete", "pod", "writer", "--timeout=60s")
	k.okIn(podWith("reader"), "apply", "-f", "-")
	waitFor(t, k, 90*time.Second, "reader Running", func(out string) bool { return out == "Running" }, "get", "pod", "reader", "-o", "jsonpath={.status.phase}")
	contains(t, "the second pod reads the first one's data", k.ok("exec", "reader", "--", "/app", "read", "/data/greeting"), "hello from the first pod")

	// The claim goes after its pod: Delete reclaims the volume, and the
	// agent's sweep (every 30s) removes the directory.
	k.ok("delete", "pod", "reader", "--timeout=60s")
	k.ok("delete", "pvc", "data")
	waitFor(t, k, 30*time.Second, "volume deleted", func(out string) bool { return !strings.Contains(out, pv) }, "get", "pv", "-o", "name")
	deadline := time.Now().Add(70 * time.Second)
	for {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still on the node 70s after its volume was deleted", dir)
		}
		time.Sleep(time.Second)
	}
}
