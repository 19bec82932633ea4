package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/kubelet/testimage"
)

// Pods asking for isolation skiff's runtimes cannot give, on a real node
// with containerd: one naming a RuntimeClass is refused by the API server
// (no RuntimeClass exists: 403, as Kubernetes refuses a missing class); one
// asking for a user namespace of its own (hostUsers: false) is stored but
// the node gives it no sandbox — it stays Pending, its container waiting
// in ContainerCreating, without an IP, with the kubelet's
// FailedCreatePodSandBox Event — rather than run in the host's user
// namespace; and it deletes at once.
func TestPodsAskingForIsolationTheNodeLacksDoNotRun(t *testing.T) {
	_, k := startNodeServer(t)
	image := "    image: " + testimage.Ref + "\n    args: [\"sleep\"]\n"

	out := k.fails(podManifest("sandboxed", "  runtimeClassName: gvisor\n  containers:\n  - name: app\n"+image), "apply", "-f", "-")
	contains(t, "creating a pod naming a RuntimeClass", out, `pods "sandboxed" is forbidden: pod rejected: RuntimeClass "gvisor" not found`)

	k.okIn(podManifest("userns", "  hostUsers: false\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n"+image), "apply", "-f", "-")
	waitFor(t, k, 90*time.Second, "the FailedCreatePodSandBox Event", func(out string) bool {
		return strings.Contains(out, "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces")
	}, "get", "events", "--field-selector", "involvedObject.name=userns,reason=FailedCreatePodSandBox", "-o", "jsonpath={.items[*].message}")
	got := k.ok("get", "pod", "userns", "-o", `jsonpath={.status.phase}/{.status.containerStatuses[0].state.waiting.reason}/{.status.podIP}`)
	if got != "Pending/ContainerCreating/" {
		t.Errorf("phase/container waiting reason/pod IP %q, want Pending/ContainerCreating/ (no sandbox, no address)", got)
	}
	k.ok("delete", "pod", "userns", "--timeout=30s")
}
