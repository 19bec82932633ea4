package config

import (
	"fmt"

	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
)

// CheckNodeSettings refuses the node controllers' settings that are only
// wrong together: a --cluster-cidr that --node-cidr-mask-size cannot split,
// and eviction rates and thresholds (nodelifecycle.Eviction.Check). The
// error names the settings, so the server and skiff controller-manager
// report it alike.
func CheckNodeSettings(clusterCIDR string, nodeCIDRMaskSize int, eviction nodelifecycle.Eviction) error {
	if err := nodeipam.CheckCIDRs(clusterCIDR, nodeCIDRMaskSize); err != nil {
		return fmt.Errorf("invalid --%s %s with --%s %d: %w", keyClusterCIDR, clusterCIDR, keyNodeCIDRMaskSize, nodeCIDRMaskSize, err)
	}
	if err := eviction.Check(); err != nil {
		return fmt.Errorf("invalid %w", err)
	}
	return nil
}
