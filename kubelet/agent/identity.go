package agent

import (
	"runtime"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
)

// hollowIdentities is the namespace of the name-based UUIDs hollow nodes
// report as their machine's.
var hollowIdentities = uuid.MustParse("7b204555-86f7-45f9-870f-4892b3de32b1")

// HollowNodeInfo is the node info a hollow node named name reports: this
// process's OS and architecture, the kubelet version, and a machine ID,
// system UUID and boot ID derived from the name — in the formats of
// /etc/machine-id, the DMI product UUID and the kernel's boot ID, the same
// at every start of the node and different from every other node's, as
// kubectl describe node shows them of a real node. Nothing reboots a
// hollow node: its boot ID stays.
func HollowNodeInfo(name, kubeletVersion string) corev1.NodeSystemInfo {
	id := func(kind string) string { return uuid.NewSHA1(hollowIdentities, []byte(kind+"/"+name)).String() }
	return corev1.NodeSystemInfo{
		OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH, KubeletVersion: kubeletVersion,
		OSImage: "skiff hollow node", KernelVersion: "fake",
		MachineID:  strings.ReplaceAll(id("machine-id"), "-", ""),
		SystemUUID: id("system-uuid"),
		BootID:     id("boot-id"),
	}
}
