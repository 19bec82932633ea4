//go:build linux

package nodeagent

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDetectedCapacityAndNodeInfo(t *testing.T) {
	c := detectCapacity(t.TempDir())
	if c.Cpu().Value() < 1 || c.Memory().Value() < 64<<20 || c.StorageEphemeral().Value() <= 0 || c.Pods().Value() != 110 {
		t.Errorf("capacity %v", c)
	}
	info := nodeInfo(os.DirFS("/"), "v1.33.0")
	if info.KernelVersion == "" || info.OperatingSystem != "linux" || info.KubeletVersion != "v1.33.0" || info.OSImage == "" {
		t.Errorf("node info %+v", info)
	}
}

// The node info names the machine as the kubelet does: its machine ID,
// the DMI product UUID as system UUID, and the boot ID; one that cannot be
// read (the product UUID is root's alone, and absent on some machines) is
// left empty.
func TestNodeInfoIdentity(t *testing.T) {
	host := fstest.MapFS{
		"etc/machine-id":                 {Data: []byte("0f5b1f0c7f2a4a7c9b1e2d3c4b5a6978\n")},
		"proc/sys/kernel/random/boot_id": {Data: []byte("6c2d2c11-8a0b-4f5e-9d3a-1b2c3d4e5f60\n")},
		"sys/class/dmi/id/product_uuid":  {Data: []byte("4C4C4544-0042-3510-8052-B4C04F4E4C32\n")},
		"etc/os-release":                 {Data: []byte("NAME=Debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")},
	}
	info := nodeInfo(host, "v1.33.0")
	if info.MachineID != "0f5b1f0c7f2a4a7c9b1e2d3c4b5a6978" || info.BootID != "6c2d2c11-8a0b-4f5e-9d3a-1b2c3d4e5f60" ||
		info.SystemUUID != "4C4C4544-0042-3510-8052-B4C04F4E4C32" || info.OSImage != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("node info %+v", info)
	}
	delete(host, "sys/class/dmi/id/product_uuid")
	if info := nodeInfo(host, "v1.33.0"); info.SystemUUID != "" || info.MachineID == "" {
		t.Errorf("without a product UUID: node info %+v", info)
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
