package manager

import (
	"fmt"

	"github.com/skiffkube/skiff/controllers/cronjob"
	"github.com/skiffkube/skiff/controllers/daemonset"
	"github.com/skiffkube/skiff/controllers/deployment"
	"github.com/skiffkube/skiff/controllers/endpoints"
	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/garbagecollector"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/namespace"
	"github.com/skiffkube/skiff/controllers/replicaset"
	"github.com/skiffkube/skiff/controllers/replication"
	"github.com/skiffkube/skiff/controllers/resourcequota"
	"github.com/skiffkube/skiff/controllers/statefulset"
	"github.com/skiffkube/skiff/controllers/tokensecret"
)

// ConcurrentSyncs pairs one of kube-controller-manager's --concurrent-*-syncs
// flags with the skiff controller whose workers it sets.
type ConcurrentSyncs struct {
	Flag       string
	Controller string
}

// ConcurrentSyncsFlags are the --concurrent-*-syncs flags of the controllers
// skiff has, so a kube-controller-manager command line tunes the same loops.
// Every controller, named here or not, runs Config.Workers by default (5):
// where kube's default differs (garbage collector 20, namespace 10,
// DaemonSet 2) skiff's stays, as its loops are sized for one process.
var ConcurrentSyncsFlags = []ConcurrentSyncs{
	{"concurrent-deployment-syncs", deployment.Name},
	{"concurrent-replicaset-syncs", replicaset.Name},
	{"concurrent-rc-syncs", replication.Name},
	{"concurrent-statefulset-syncs", statefulset.Name},
	{"concurrent-daemonset-syncs", daemonset.Name},
	{"concurrent-job-syncs", job.Name},
	{"concurrent-cron-job-syncs", cronjob.Name},
	{"concurrent-endpoint-syncs", endpoints.Name},
	{"concurrent-service-endpoint-syncs", endpointslice.Name},
	{"mirroring-concurrent-service-endpoint-syncs", endpointslicemirroring.Name},
	{"concurrent-namespace-syncs", namespace.Name},
	{"concurrent-gc-syncs", garbagecollector.Name},
	{"concurrent-serviceaccount-token-syncs", tokensecret.Name},
	{"concurrent-resource-quota-syncs", resourcequota.Name},
}

// CheckConcurrentSyncs refuses a worker count a controller cannot run with.
func CheckConcurrentSyncs(n int) error {
	if n < 1 {
		return fmt.Errorf("must be at least 1 (to stop a controller, leave it out of --controllers)")
	}
	return nil
}

// workers is how many workers the named controller runs.
func (c *Config) workers(name string) int {
	if n, ok := c.ConcurrentSyncs[name]; ok {
		return n
	}
	return c.Workers
}
