package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// binPacking is kube-scheduler's configuration file that packs pods onto
// the fullest node that fits. ImageLocality is left out so that the
// scoring strategy alone decides where the pods go.
const binPacking = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      disabled: [{name: ImageLocality}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`

// The server's scheduler follows kube-scheduler's configuration file: with
// MostAllocated scoring, pods that would be spread over two empty nodes
// (the default, LeastAllocated) all land on one, until it is full.
func TestSchedulerConfigFileBinPacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(binPacking), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--scheduler-config", path)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow", "--capacity", "cpu=4,memory=8Gi,pods=110")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	// Bare pods (no owner, so no default topology spreading), one at a time
	// so that each is scored against the ones before it. Each asks for a
	// quarter of a node's CPU and memory alike, so that balanced allocation
	// ranks both nodes the same.
	place := func(name string) string {
		k.okIn(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: c
    image: example.com/app:1
    resources: {requests: {cpu: "1", memory: 2Gi}}
`, name), "apply", "-f", "-")
		k.ok("wait", "--for=condition=PodScheduled", "pod/"+name, "--timeout=60s")
		return strings.TrimSpace(k.ok("get", "pod", name, "-o", "jsonpath={.spec.nodeName}"))
	}
	first := place("p0")
	for i := 1; i < 4; i++ {
		if node := place(fmt.Sprintf("p%d", i)); node != first {
			t.Fatalf("pod p%d went to %s, not to the fuller %s: the file's MostAllocated was not applied", i, node, first)
		}
	}
	// That node is full now; the next pod has to go to the other.
	if node := place("p4"); node == first {
		t.Fatalf("pod p4 went to the full node %s", node)
	}

	// The server's log says what the scheduler runs with.
	var started string
	for _, line := range strings.Split(s.log.String(), "\n") {
		if strings.Contains(line, "scheduler started") {
			started = line
		}
	}
	if !strings.Contains(started, "scoringStrategy=MostAllocated") || !strings.Contains(started, "NodeResourcesFit(weight 1)") ||
		strings.Contains(started, "ImageLocality") {
		t.Errorf("the scheduler's start-up line does not show the file's configuration: %q", started)
	}
}
