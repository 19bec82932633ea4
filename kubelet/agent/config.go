package agent

import (
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
)

// Config describes one node.
type Config struct {
	// NodeName is the Node object's name.
	NodeName string
	// Capacity of the node; Allocatable defaults to it.
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	Labels      map[string]string
	// Annotations the agent keeps on its Node (the local-path directory).
	Annotations map[string]string
	Taints      []corev1.Taint
	// Addresses reported in node status (InternalIP, Hostname).
	Addresses []corev1.NodeAddress
	// NodeInfo reported in node status (kernel, OS, architecture…); the
	// runtime version is filled in by the agent.
	NodeInfo corev1.NodeSystemInfo
	// LeaseDuration is the Lease's leaseDurationSeconds; the lease is renewed
	// every quarter of it. Default 40s, as the kubelet.
	LeaseDuration time.Duration
	// StatusUpdateInterval is how often the Ready condition's heartbeat is
	// refreshed when nothing changed. Default 1m.
	StatusUpdateInterval time.Duration
	// StatusReportInterval is how long an unchanged node status goes
	// unwritten: each StatusUpdateInterval the status is computed and
	// written only if it changed or this much time has passed since the
	// last write (the kubelet's nodeStatusReportFrequency). Liveness is
	// the Lease's job. Default 5m.
	StatusReportInterval time.Duration
	// DaemonPort is the node API's port, reported in node status
	// (daemonEndpoints.kubeletEndpoint) for the API server to proxy logs
	// and exec to; 0 when the node serves no API (hollow nodes).
	DaemonPort int32
	// RuntimeRetry is how often a DeferredRuntime that failed to open is
	// tried again. Default 5s.
	RuntimeRetry time.Duration
	// Recorder, when set, receives the pod Events a kubelet records (a
	// container started, an image pull failing, a back-off, a stop), so
	// that kubectl describe tells the story; nil records none.
	Recorder record.EventRecorder
	// Pressure, when set, is the node's eviction manager: it decides the
	// MemoryPressure, DiskPressure and PIDPressure conditions and evicts
	// pods under pressure. Without it (hollow nodes) they stay False.
	Pressure PressureMonitor
	Logger   *slog.Logger
}

// DefaultCapacity is a modest node: 4 CPUs, 8 GiB, 110 pods.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

func (c Config) withDefaults() (Config, error) {
	if c.NodeName == "" {
		return c, fmt.Errorf("agent: NodeName is required")
	}
	if c.Capacity == nil {
		c.Capacity = DefaultCapacity()
	}
	if c.Allocatable == nil {
		c.Allocatable = c.Capacity.DeepCopy()
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 40 * time.Second
	}
	if c.StatusUpdateInterval == 0 {
		c.StatusUpdateInterval = time.Minute
	}
	if c.StatusReportInterval == 0 {
		c.StatusReportInterval = 5 * time.Minute
	}
	if c.RuntimeRetry == 0 {
		c.RuntimeRetry = 5 * time.Second
	}
	if c.DaemonPort < 0 || c.DaemonPort > 65535 {
		return c, fmt.Errorf("agent: DaemonPort %d out of range", c.DaemonPort)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = c.Logger.With("node", c.NodeName)
	return c, nil
}
