package main

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbase "k8s.io/component-base/config/v1alpha1"
	kcmconfig "k8s.io/kube-controller-manager/config/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/manager"
)

// controllerManagerConfigz is what skiff controller-manager serves on
// /configz: the KubeControllerManagerConfiguration its flags (s, cfg, and
// --terminated-pod-gc-threshold and --root-ca-file as given) amount to.
// The fields skiff has no setting for are left at their zero values.
func controllerManagerConfigz(s standalone, cfg manager.Config, terminatedPodGC int, rootCAFile string) *kcmconfig.KubeControllerManagerConfiguration {
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	c := &kcmconfig.KubeControllerManagerConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubecontrollermanager.config.k8s.io/v1alpha1", Kind: "KubeControllerManagerConfiguration"},
	}
	g := &c.Generic
	g.Address, g.Port = s.bindAddress, int32(s.securePort)
	g.ClientConnection = componentbase.ClientConnectionConfiguration{Kubeconfig: s.kubeconfig, QPS: s.qps, Burst: int32(s.burst)}
	g.LeaderElection = componentbase.LeaderElectionConfiguration{
		LeaderElect: ptr.To(true), LeaseDuration: dur(s.le.leaseDuration), RenewDeadline: dur(s.le.renewDeadline), RetryPeriod: dur(s.le.retryPeriod),
		ResourceLock: "leases", ResourceNamespace: manager.DefaultLeaseNamespace, ResourceName: manager.DefaultLeaseName,
	}
	g.Controllers = cfg.Controllers
	g.Debugging.EnableProfiling = ptr.To(s.profiling)
	// Each controller acts as its own service account (see runControllerManager).
	c.KubeCloudShared.UseServiceAccountCredentials = true
	c.KubeCloudShared.ClusterCIDR, c.KubeCloudShared.AllocateNodeCIDRs = cfg.ClusterCIDR, true
	c.NodeIPAMController.NodeCIDRMaskSize = int32(cfg.NodeCIDRMaskSize)
	c.NodeIPAMController.ServiceCIDR = cfg.ServiceCIDR
	nl, e := &c.NodeLifecycleController, cfg.NodeEviction
	nl.NodeEvictionRate, nl.SecondaryNodeEvictionRate = e.Rate, e.SecondaryRate
	nl.UnhealthyZoneThreshold, nl.LargeClusterSizeThreshold = float32(e.UnhealthyZoneThreshold), int32(e.LargeClusterSizeThreshold)
	nl.NodeMonitorGracePeriod, nl.NodeStartupGracePeriod = dur(cfg.NodeMonitorGracePeriod), dur(cfg.NodeStartupGracePeriod)
	c.PodGCController.TerminatedPodGCThreshold = int32(terminatedPodGC)
	c.LegacySATokenCleaner.CleanUpPeriod = dur(cfg.LegacyServiceAccountTokenCleanUpPeriod)
	for _, f := range manager.ConcurrentSyncsFlags {
		if field := concurrentSyncsField(c, f.Flag); field != nil {
			*field = int32(cfg.ConcurrentSyncs[f.Controller])
		}
	}
	c.EndpointSliceController.MaxEndpointsPerSlice = int32(cfg.MaxEndpointsPerSlice)
	c.EndpointSliceMirroringController.MirroringMaxEndpointsPerSubset = int32(cfg.MirroringMaxEndpointsPerSubset)
	c.SAController.RootCAFile = rootCAFile
	return c
}

// concurrentSyncsField is the field of c that kube-controller-manager's
// flag sets, one of manager.ConcurrentSyncsFlags; nil for another flag.
func concurrentSyncsField(c *kcmconfig.KubeControllerManagerConfiguration, flag string) *int32 {
	switch flag {
	case "concurrent-deployment-syncs":
		return &c.DeploymentController.ConcurrentDeploymentSyncs
	case "concurrent-replicaset-syncs":
		return &c.ReplicaSetController.ConcurrentRSSyncs
	case "concurrent-rc-syncs":
		return &c.ReplicationController.ConcurrentRCSyncs
	case "concurrent-statefulset-syncs":
		return &c.StatefulSetController.ConcurrentStatefulSetSyncs
	case "concurrent-daemonset-syncs":
		return &c.DaemonSetController.ConcurrentDaemonSetSyncs
	case "concurrent-job-syncs":
		return &c.JobController.ConcurrentJobSyncs
	case "concurrent-cron-job-syncs":
		return &c.CronJobController.ConcurrentCronJobSyncs
	case "concurrent-endpoint-syncs":
		return &c.EndpointController.ConcurrentEndpointSyncs
	case "concurrent-service-endpoint-syncs":
		return &c.EndpointSliceController.ConcurrentServiceEndpointSyncs
	case "mirroring-concurrent-service-endpoint-syncs":
		return &c.EndpointSliceMirroringController.MirroringConcurrentServiceEndpointSyncs
	case "concurrent-namespace-syncs":
		return &c.NamespaceController.ConcurrentNamespaceSyncs
	case "concurrent-gc-syncs":
		return &c.GarbageCollectorController.ConcurrentGCSyncs
	case "concurrent-serviceaccount-token-syncs":
		return &c.SAController.ConcurrentSATokenSyncs
	case "concurrent-resource-quota-syncs":
		return &c.ResourceQuotaController.ConcurrentResourceQuotaSyncs
	}
	return nil
}
