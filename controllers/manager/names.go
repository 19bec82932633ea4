package manager

import (
	"fmt"

	"github.com/skiffkube/skiff/controllers/cronjob"
	"github.com/skiffkube/skiff/controllers/daemonset"
	"github.com/skiffkube/skiff/controllers/deployment"
	"github.com/skiffkube/skiff/controllers/disruption"
	"github.com/skiffkube/skiff/controllers/endpoints"
	"github.com/skiffkube/skiff/controllers/endpointslice"
	"github.com/skiffkube/skiff/controllers/endpointslicemirroring"
	"github.com/skiffkube/skiff/controllers/garbagecollector"
	"github.com/skiffkube/skiff/controllers/job"
	"github.com/skiffkube/skiff/controllers/legacytokencleaner"
	"github.com/skiffkube/skiff/controllers/namespace"
	"github.com/skiffkube/skiff/controllers/nodeipam"
	"github.com/skiffkube/skiff/controllers/nodelifecycle"
	"github.com/skiffkube/skiff/controllers/persistentvolume"
	"github.com/skiffkube/skiff/controllers/podgc"
	"github.com/skiffkube/skiff/controllers/replicaset"
	"github.com/skiffkube/skiff/controllers/replication"
	"github.com/skiffkube/skiff/controllers/resourcequota"
	"github.com/skiffkube/skiff/controllers/rootcacert"
	"github.com/skiffkube/skiff/controllers/serviceaccount"
	"github.com/skiffkube/skiff/controllers/statefulset"
	"github.com/skiffkube/skiff/controllers/tokensecret"
	"github.com/skiffkube/skiff/controllers/volumeprotection"
)

// kubeNames maps the names kube-controller-manager's --controllers takes
// (since 1.28 a canonical "…-controller" name, and the short name of earlier
// releases as an alias) to skiff's controller doing the same work, so that a
// --controllers line written for kube-controller-manager means the same
// here. skiff keeps its own names as the canonical ones: they label the
// workqueue_* metrics, and renaming them would break dashboards.
var kubeNames = map[string]string{
	"serviceaccount-token-controller":  tokensecret.Name,
	"serviceaccount-token":             tokensecret.Name,
	"endpoint":                         endpoints.Name,
	"endpointslice":                    endpointslice.Name,
	"endpointslicemirroring":           endpointslicemirroring.Name,
	"replicaset":                       replicaset.Name,
	"replicationcontroller":            replication.Name,
	"deployment":                       deployment.Name,
	"daemonset":                        daemonset.Name,
	"statefulset":                      statefulset.Name,
	"job":                              job.Name,
	"cronjob":                          cronjob.Name,
	"namespace":                        namespace.Name,
	"garbagecollector":                 garbagecollector.Name,
	"disruption":                       disruption.Name,
	"pod-garbage-collector-controller": podgc.Name,
	"podgc":                            podgc.Name,
	"node-ipam-controller":             nodeipam.Name,
	"nodeipam":                         nodeipam.Name,
	"node-lifecycle-controller":        nodelifecycle.Name,
	"nodelifecycle":                    nodelifecycle.Name,
	"persistentvolume-binder":          persistentvolume.Name,
	"resourcequota":                    resourcequota.Name,
	"serviceaccount":                   serviceaccount.Name,
	"root-ca-certificate-publisher-controller":       rootcacert.Name,
	"legacy-serviceaccount-token-cleaner-controller": legacytokencleaner.Name,
	"legacy-service-account-token-cleaner":           legacytokencleaner.Name,
}

// kubeFolded are kube-controller-manager controllers whose work a larger
// skiff controller does: naming one of them could only turn on or off the
// whole of that controller, which is not what the line says, so it is
// refused with the name to use instead.
var kubeFolded = map[string]string{
	"persistentvolumeclaim-protection-controller": volumeprotection.Name,
	"pvc-protection":                         volumeprotection.Name,
	"persistentvolume-protection-controller": volumeprotection.Name,
	"pv-protection":                          volumeprotection.Name,
	"ttl-after-finished-controller":          job.Name,
	"ttl-after-finished":                     job.Name,
}

// resolveName returns skiff's name for a --controllers entry: its own, or
// kube-controller-manager's name of the same controller. ok is false for a
// name neither knows; err explains a kube name skiff cannot honour alone.
func resolveName(name string) (resolved string, ok bool, err error) {
	if _, known := Registry[name]; known {
		return name, true, nil
	}
	if n, known := kubeNames[name]; known {
		return n, true, nil
	}
	if n, folded := kubeFolded[name]; folded {
		return "", false, fmt.Errorf("%q is part of skiff's %s, which can only run or stop as a whole: name %s instead", name, n, n)
	}
	return "", false, nil
}
