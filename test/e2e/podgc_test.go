package e2e

import (
	"fmt"
	"testing"
	"time"
)

// With --terminated-pod-gc-threshold 2 the pod garbage collector keeps the
// two newest of four finished pods and deletes the others, oldest first,
// saying so in an Event; the running pod is never counted.
func TestTerminatedPodGCThreshold(t *testing.T) {
	s := startServer(t, "--terminated-pod-gc-threshold", "2")
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--node-name", "gc")
	waitFor(t, k, 60*time.Second, "the hollow node Ready", func(out string) bool { return out == "True" },
		"get", "node", "gc", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)

	pod := func(name, exitAfter string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations: {hollow.skiff.dev/exit-after: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: example.com/batch:1}]
`, name, exitAfter)
	}
	k.okIn(pod("running", "1h"), "apply", "-f", "-")
	// Creation times have a resolution of one second: a second apart, the
	// oldest are known.
	for i := range 4 {
		k.okIn(pod(fmt.Sprintf("done-%d", i), "1s"), "apply", "-f", "-")
		time.Sleep(1100 * time.Millisecond)
	}
	// The collector sweeps every 20 s: the two oldest go within one sweep
	// of the last pod finishing.
	out := waitFor(t, k, 60*time.Second, "the two newest finished pods and the running one left", func(out string) bool {
		return out == "done-2=Succeeded done-3=Succeeded running=Running"
	}, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}`)
	t.Logf("pods left: %s", out)
	eventually(t, k, []string{"PodGCTerminated   done-0   Deleted: more than 2 terminated pods", "PodGCTerminated   done-1"},
		"get", "events", "--field-selector", "reason=PodGCTerminated", "--sort-by", ".metadata.creationTimestamp",
		"-o", "custom-columns=REASON:.reason,POD:.involvedObject.name,MESSAGE:.message")
}
