package agent_test

import (
	"regexp"
	goruntime "runtime"
	"testing"

	"github.com/google/uuid"

	"github.com/skiffkube/skiff/kubelet/agent"
)

// A hollow node reports a machine ID, system UUID and boot ID, as every
// real node does (kubectl describe node shows them): each in its host
// format, the same at every start of the node, and different from every
// other node's.
func TestHollowIdentityIsStableAndPerNode(t *testing.T) {
	machineID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]string{}
	for _, name := range []string{"hollow-0", "hollow-1", "hollow-10", "node"} {
		info := agent.HollowNodeInfo(name, "v1.33.0")
		if info.KubeletVersion != "v1.33.0" || info.OperatingSystem != goruntime.GOOS || info.Architecture != goruntime.GOARCH {
			t.Errorf("%s: node info %+v", name, info)
		}
		if !machineID.MatchString(info.MachineID) {
			t.Errorf("%s: machine ID %q is not 32 lowercase hex digits, as /etc/machine-id", name, info.MachineID)
		}
		for what, id := range map[string]string{"system UUID": info.SystemUUID, "boot ID": info.BootID} {
			if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
				t.Errorf("%s: %s %q is not a UUID: %v", name, what, id, err)
			}
		}
		for _, id := range []string{info.MachineID, info.SystemUUID, info.BootID} {
			if other, dup := seen[id]; dup {
				t.Errorf("%s: ID %q is also %s's", name, id, other)
			}
			seen[id] = name
		}
		if again := agent.HollowNodeInfo(name, "v1.33.0"); again != info {
			t.Errorf("%s: %+v, then %+v", name, info, again)
		}
	}
}
