package manager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

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
	"github.com/skiffkube/skiff/controllers/localpath"
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

// Runnable is what every controller provides.
type Runnable interface {
	Run(ctx context.Context, workers int)
}

// BuildContext is what a controller constructor receives.
type BuildContext struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder reporting as the given component.
	Recorder func(component string) record.EventRecorder
	Options  Options
	Config   Config
}

// ErrUnavailable is returned by a constructor whose dependencies are missing from Options. Such a
// controller is skipped (with a log line) when the controller list is the default, and is an error
// when it was asked for by name.
var ErrUnavailable = errors.New("controller unavailable with these options")

// Constructor builds one controller.
type Constructor func(b BuildContext) (Runnable, error)

// Registry lists every controller by name. Config.Controllers selects from it.
var Registry = map[string]Constructor{
	replicaset.Name: func(b BuildContext) (Runnable, error) {
		return replicaset.New(b.Client, b.Informers.Apps().V1().ReplicaSets(), b.Informers.Core().V1().Pods(),
			b.Recorder(replicaset.Name), replicaset.Options{Logger: b.Options.Logger})
	},
	replication.Name: func(b BuildContext) (Runnable, error) {
		return replication.New(b.Client, b.Informers.Core().V1().ReplicationControllers(), b.Informers.Core().V1().Pods(),
			b.Recorder(replication.EventSource), replication.Options{Logger: b.Options.Logger})
	},
	deployment.Name: func(b BuildContext) (Runnable, error) {
		return deployment.New(b.Client, b.Informers.Apps().V1().Deployments(), b.Informers.Apps().V1().ReplicaSets(),
			b.Informers.Core().V1().Pods(), b.Recorder(deployment.Name), deployment.Options{Logger: b.Options.Logger})
	},
	endpointslice.Name: func(b BuildContext) (Runnable, error) {
		return endpointslice.New(b.Client, b.Informers.Core().V1().Services(), b.Informers.Core().V1().Pods(),
			b.Informers.Core().V1().Nodes(), b.Informers.Discovery().V1().EndpointSlices(), b.Recorder(endpointslice.EventSource), endpointslice.Options{Logger: b.Options.Logger, MaxEndpointsPerSlice: b.Config.MaxEndpointsPerSlice})
	},
	endpointslicemirroring.Name: func(b BuildContext) (Runnable, error) {
		return endpointslicemirroring.New(b.Client, b.Informers.Core().V1().Services(), b.Informers.Core().V1().Endpoints(),
			b.Informers.Discovery().V1().EndpointSlices(), b.Recorder(endpointslicemirroring.EventSource),
			endpointslicemirroring.Options{Logger: b.Options.Logger, MaxEndpointsPerSubset: b.Config.MirroringMaxEndpointsPerSubset})
	},
	endpoints.Name: func(b BuildContext) (Runnable, error) {
		return endpoints.New(b.Client, b.Informers.Core().V1().Services(), b.Informers.Core().V1().Pods(),
			b.Informers.Core().V1().Endpoints(), b.Recorder(endpoints.EventSource), endpoints.Options{Logger: b.Options.Logger})
	},
	namespace.Name: func(b BuildContext) (Runnable, error) {
		if b.Options.Metadata == nil {
			return nil, fmt.Errorf("%w: the namespace controller needs Options.Metadata (metadata.NewForConfig)", ErrUnavailable)
		}
		return namespace.New(b.Client, b.Options.Metadata, b.Informers.Core().V1().Namespaces(), b.Recorder(namespace.Name),
			namespace.Options{Logger: b.Options.Logger})
	},
	garbagecollector.Name: func(b BuildContext) (Runnable, error) {
		if b.Options.Metadata == nil {
			return nil, fmt.Errorf("%w: the garbage collector needs Options.Metadata (metadata.NewForConfig)", ErrUnavailable)
		}
		opts := garbagecollector.Options{Logger: b.Options.Logger}
		// A factory that can hand out the informers other loops run (a sharedinformers.View)
		// spares the collector a second watch and cache of pods and the like.
		if shared, ok := b.Informers.(garbagecollector.SharedInformers); ok {
			opts.Shared = shared
		}
		return garbagecollector.New(b.Client.Discovery(), b.Options.Metadata, b.Recorder(garbagecollector.Name), opts)
	},
	daemonset.Name: func(b BuildContext) (Runnable, error) {
		return daemonset.New(b.Client, b.Informers.Apps().V1().DaemonSets(), b.Informers.Apps().V1().ControllerRevisions(),
			b.Informers.Core().V1().Pods(), b.Informers.Core().V1().Nodes(), b.Recorder(daemonset.Name),
			daemonset.Options{Logger: b.Options.Logger})
	},
	statefulset.Name: func(b BuildContext) (Runnable, error) {
		return statefulset.New(b.Client, b.Informers.Apps().V1().StatefulSets(), b.Informers.Apps().V1().ControllerRevisions(),
			b.Informers.Core().V1().Pods(), b.Informers.Core().V1().PersistentVolumeClaims(), b.Recorder(statefulset.Name), statefulset.Options{Logger: b.Options.Logger})
	},
	cronjob.Name: func(b BuildContext) (Runnable, error) {
		return cronjob.New(b.Client, b.Informers.Batch().V1().CronJobs(), b.Informers.Batch().V1().Jobs(), b.Recorder(cronjob.Name),
			cronjob.Options{Logger: b.Options.Logger})
	},
	disruption.Name: func(b BuildContext) (Runnable, error) {
		return disruption.New(b.Client, disruption.Informers{
			PDBs: b.Informers.Policy().V1().PodDisruptionBudgets(), Pods: b.Informers.Core().V1().Pods(),
			ReplicaSets: b.Informers.Apps().V1().ReplicaSets(), Deployments: b.Informers.Apps().V1().Deployments(),
			StatefulSets: b.Informers.Apps().V1().StatefulSets(), ReplicationControllers: b.Informers.Core().V1().ReplicationControllers(),
		}, b.Recorder(disruption.EventSource), disruption.Options{Logger: b.Options.Logger, Discovery: b.Client.Discovery()})
	},
	podgc.Name: func(b BuildContext) (Runnable, error) {
		return podgc.New(b.Client, b.Informers.Core().V1().Pods(), b.Informers.Core().V1().Nodes(), b.Recorder(podgc.Name),
			podgc.Options{Threshold: b.Config.TerminatedPodGCThreshold, Logger: b.Options.Logger})
	},
	job.Name: func(b BuildContext) (Runnable, error) {
		return job.New(b.Client, b.Informers.Batch().V1().Jobs(), b.Informers.Core().V1().Pods(), b.Recorder(job.Name),
			job.Options{Logger: b.Options.Logger})
	},
	nodeipam.Name: func(b BuildContext) (Runnable, error) {
		return nodeipam.New(b.Client, b.Informers.Core().V1().Nodes(), b.Recorder(nodeipam.EventSource),
			nodeipam.Options{ClusterCIDR: b.Config.ClusterCIDR, NodeMaskSize: b.Config.NodeCIDRMaskSize, ServiceCIDR: b.Config.ServiceCIDR,
				Logger: b.Options.Logger})
	},
	serviceaccount.Name: func(b BuildContext) (Runnable, error) {
		return serviceaccount.New(b.Client, b.Informers.Core().V1().Namespaces(), b.Informers.Core().V1().ServiceAccounts(),
			b.Recorder(serviceaccount.Name), serviceaccount.Options{Logger: b.Options.Logger})
	},
	resourcequota.Name: func(b BuildContext) (Runnable, error) {
		core := b.Informers.Core().V1()
		return resourcequota.New(b.Client, resourcequota.Informers{
			Quotas: core.ResourceQuotas(), Pods: core.Pods(), Services: core.Services(),
			ConfigMaps: core.ConfigMaps(), Secrets: core.Secrets(), Claims: core.PersistentVolumeClaims(),
		}, quotaOptions(b))
	},
	tokensecret.Name: func(b BuildContext) (Runnable, error) {
		return tokensecret.New(b.Client, b.Informers.Core().V1().Secrets(), b.Informers.Core().V1().ServiceAccounts(),
			b.Recorder(tokensecret.Name), tokensecret.Options{Logger: b.Options.Logger, RootCA: b.Options.RootCA})
	},
	legacytokencleaner.Name: func(b BuildContext) (Runnable, error) {
		c := b.Informers.Core().V1()
		return legacytokencleaner.New(b.Client, c.Secrets(), c.ServiceAccounts(), c.Pods(),
			legacytokencleaner.Options{Logger: b.Options.Logger, CleanUpPeriod: b.Config.LegacyServiceAccountTokenCleanUpPeriod})
	},
	rootcacert.Name: func(b BuildContext) (Runnable, error) {
		if len(b.Options.RootCA) == 0 {
			return nil, fmt.Errorf("%w: the root CA publisher needs Options.RootCA", ErrUnavailable)
		}
		return rootcacert.New(b.Client, b.Informers.Core().V1().Namespaces(), b.Informers.Core().V1().ConfigMaps(),
			rootcacert.Options{Logger: b.Options.Logger, RootCA: b.Options.RootCA})
	},
	persistentvolume.Name: func(b BuildContext) (Runnable, error) {
		c := b.Informers.Core().V1()
		return persistentvolume.New(b.Client, c.PersistentVolumeClaims(), c.PersistentVolumes(), b.Informers.Storage().V1().StorageClasses(), c.Nodes(), b.Recorder(persistentvolume.EventSource), persistentvolume.Options{Logger: b.Options.Logger})
	},
	localpath.Name: func(b BuildContext) (Runnable, error) {
		c := b.Informers.Core().V1()
		return localpath.New(b.Client, c.PersistentVolumeClaims(), c.PersistentVolumes(), b.Informers.Storage().V1().StorageClasses(), c.Nodes(), b.Recorder(localpath.Name), localpath.Options{Logger: b.Options.Logger})
	},
	volumeprotection.Name: func(b BuildContext) (Runnable, error) {
		c := b.Informers.Core().V1()
		return volumeprotection.New(b.Client, c.PersistentVolumeClaims(), c.PersistentVolumes(), c.Pods(), volumeprotection.Options{Logger: b.Options.Logger})
	},
	nodelifecycle.Name: func(b BuildContext) (Runnable, error) {
		return nodelifecycle.New(b.Client, b.Informers.Core().V1().Nodes(), b.Informers.Coordination().V1().Leases(),
			b.Informers.Core().V1().Pods(), b.Recorder(nodelifecycle.EventSource),
			nodelifecycle.Options{EvictionRecorder: b.Recorder(nodelifecycle.TaintEvictionEventSource), GracePeriod: b.Config.NodeMonitorGracePeriod, StartupGracePeriod: b.Config.NodeStartupGracePeriod, Eviction: b.Config.NodeEviction, Logger: b.Options.Logger})
	},
}

// quotaOptions are the ResourceQuota controller's options: with a factory
// that hands out the informers other loops run (a sharedinformers.View),
// the deletes of a counted kind one of them watches are seen there.
func quotaOptions(b BuildContext) resourcequota.Options {
	opts := resourcequota.Options{Logger: b.Options.Logger, Metadata: b.Options.Metadata, Discovery: b.Client.Discovery()}
	if shared, ok := b.Informers.(resourcequota.SharedInformers); ok {
		opts.Shared = shared
	}
	return opts
}
