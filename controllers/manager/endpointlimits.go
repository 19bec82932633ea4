package manager

import (
	"fmt"

	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
)

// Bounds of kube-controller-manager's --max-endpoints-per-slice and
// --mirroring-max-endpoints-per-subset, the same for both.
const (
	MinEndpointsPerSlice = 1
	MaxEndpointsPerSlice = 1000
)

// CheckEndpointsPerSlice refuses a --max-endpoints-per-slice or
// --mirroring-max-endpoints-per-subset outside Kubernetes' bounds.
func CheckEndpointsPerSlice(n int) error {
	if n < MinEndpointsPerSlice || n > MaxEndpointsPerSlice {
		return fmt.Errorf("must be %d-%d", MinEndpointsPerSlice, MaxEndpointsPerSlice)
	}
	return nil
}

// endpointLimits fills in and checks the EndpointSlice controllers' limits.
func (c *Config) endpointLimits() error {
	for _, l := range []struct {
		flag string
		n    *int
		def  int
	}{
		{"max-endpoints-per-slice", &c.MaxEndpointsPerSlice, endpointslice.MaxEndpointsPerSlice},
		{"mirroring-max-endpoints-per-subset", &c.MirroringMaxEndpointsPerSubset, endpointslicemirroring.MaxEndpointsPerSubset},
	} {
		if *l.n == 0 {
			*l.n = l.def
		}
		if err := CheckEndpointsPerSlice(*l.n); err != nil {
			return fmt.Errorf("manager: --%s %d: %w", l.flag, *l.n, err)
		}
	}
	return nil
}
