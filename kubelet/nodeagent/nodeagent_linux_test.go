//go:build linux

package nodeagent

import (
	"context"
	"strings"
	"testing"
)

func TestDetectedCapacityAndNodeInfo(t *testing.T) {
	c := detectCapacity(t.TempDir())
	if c.Cpu().Value() < 1 || c.Memory().Value() < 64<<20 || c.StorageEphemeral().Value() <= 0 || c.Pods().Value() != 110 {
		t.Errorf("capacity %v", c)
	}
	info := nodeInfo("v1.33.0")
	if info.KernelVersion == "" || info.OperatingSystem != "linux" || info.KubeletVersion != "v1.33.0" || info.OSImage == "" {
		t.Errorf("node info %+v", info)
	}
}

// Bad options are refused before anything listens or registers.
func TestRunRefusesIncompleteOptions(t *testing.T) {
	err := Run(context.Background(), Options{NodeName: "n", DataDir: "relative"})
	if err == nil {
		t.Fatal("incomplete options accepted")
	}
	for _, want := range []string{"a client is required", "the node IP is empty", `data directory "relative" must be an absolute path`,
		"client CA", "serving certificate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
