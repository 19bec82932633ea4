//go:build linux

package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/eviction"
	"github.com/skiffkube/skiff/kubelet/logs"
	"github.com/skiffkube/skiff/kubelet/nodeapi"
	"github.com/skiffkube/skiff/kubelet/podruntime"
	"github.com/skiffkube/skiff/kubelet/runtime/containerd"
)

var getOptions = metav1.GetOptions{}

// RuntimeName is the container runtime reported in node status.
const RuntimeName = "containerd"

// errNotOpen answers node API calls that come before the runtime is open.
var errNotOpen = errors.New("the node's container runtime is not ready yet")

// Run registers the node, serves its pods and its API until ctx ends.
// Containers keep running when it returns (a restarted agent adopts them).
func Run(ctx context.Context, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	tlsCfg, err := nodeapi.TLSConfig(o.Serving, o.ClientCA, o.APIClientUsers...)
	if err != nil {
		return err
	}
	if get := o.GetServing; get != nil {
		fallback := o.Serving
		// GetCertificate is consulted without SNI (callers dial the node's
		// IP) only when Certificates is empty.
		tlsCfg.Certificates = nil
		tlsCfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := get(); c != nil {
				return c, nil
			}
			return &fallback, nil
		}
	}
	l, err := net.Listen("tcp", o.APIAddress)
	if err != nil {
		return fmt.Errorf("node API: listen on %s: %w", o.APIAddress, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	capacity := o.Capacity
	if capacity == nil {
		capacity = detectCapacity(o.DataDir)
	}

	// Pod Events, as the kubelet records them (source "kubelet", this host).
	events := agent.NewEventRecorders()
	defer events.Stop()
	recorder := events.For(o.NodeName, o.Client)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var opened *podruntime.Node
	var images ImageGC
	open := func(ctx context.Context, podCIDR string) (agent.Runtime, error) {
		n, err := podruntime.OpenNode(ctx, podruntime.NodeOptions{
			DataDir: o.DataDir, PodCIDR: podCIDR, ContainerdSocket: o.ContainerdSocket, LogDriver: o.LogDriver,
			LogDir: o.LogDir, Objects: clientObjects{o.Client}, Logger: o.Logger, Recorder: recorder,
		})
		if err != nil {
			return nil, err
		}
		// Pods deleted while no agent ran still have containers here; no
		// pod of this node has been started by this process yet, so
		// whatever the API does not list is an orphan.
		if keep, err := podsOf(ctx, o); err != nil {
			o.Logger.Warn("listing this node's pods for orphan clean-up", "err", err)
		} else if err := n.CleanupOrphans(ctx, keep); err != nil {
			o.Logger.Warn("cleaning up orphaned pods", "err", err)
		}
		// The collector lives as long as Run, not the opening call.
		if err := images.start(runCtx, o, n, recorder); err != nil {
			n.Close()
			return nil, err
		}
		mu.Lock()
		opened = n
		mu.Unlock()
		return n.Runtime, nil
	}
	// The eviction manager measures this machine (see kubelet/eviction).
	logDir := o.LogDir
	if logDir == "" {
		logDir = podruntime.DefaultLogDir
	}
	// Disk signals first remove unused images (the kubelet's reclaim),
	// and imagefs is measured where image garbage collection measures.
	reclaimer := o.Reclaimer
	if reclaimer == nil {
		reclaimer = &images
	}
	pressure, err := eviction.New(eviction.Config{
		Hard: o.EvictionHard, PressureTransitionPeriod: o.EvictionPressureTransitionPeriod,
		MonitoringInterval: o.EvictionMonitoringInterval, Reclaimer: reclaimer, Logger: o.Logger,
		Source: eviction.NodeSource{
			NodeFsDir: o.DataDir, ImageFsDir: o.ImageFSPath, CgroupRoot: containerd.DefaultCgroupRoot,
			PodDir: filepath.Join(o.DataDir, "agent", "pods"), LogDir: logDir,
		},
	})
	if err != nil {
		l.Close()
		return err
	}
	a, err := agent.New(o.Client, agent.NewDeferred(RuntimeName, open), agent.Config{
		NodeName: o.NodeName, Capacity: capacity, Labels: o.Labels, DaemonPort: int32(port), Logger: o.Logger, Recorder: recorder,
		Pressure:    pressure,
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: o.NodeIP}, {Type: corev1.NodeHostName, Address: o.NodeName}},
		NodeInfo:    nodeInfo(os.DirFS("/"), o.KubeletVersion),
		Annotations: map[string]string{LocalPathDirAnnotation: localPathDir(o.DataDir)},
	})
	if err != nil {
		l.Close()
		return err
	}
	pods := lazyPods(func() (*podruntime.Runtime, error) {
		mu.Lock()
		defer mu.Unlock()
		if opened == nil {
			return nil, errNotOpen
		}
		return opened.Runtime, nil
	})

	served := make(chan error, 1)
	go func() { served <- nodeapi.Serve(runCtx, l, tlsCfg, nodeapi.NewHandler(pods), o.Logger) }()
	hostname, ok := o.Labels[corev1.LabelHostname]
	go sweepLocalPath(runCtx, o.Client, localPathDir(o.DataDir), !ok || hostname == o.NodeName, o.Logger)
	o.Logger.Info("node agent starting", "node", o.NodeName, "nodeIP", o.NodeIP, "nodeAPI", l.Addr().String())
	err = a.Run(runCtx, o.Workers)
	cancel()
	err = errors.Join(err, <-served)
	mu.Lock()
	if opened != nil {
		err = errors.Join(err, opened.Close())
	}
	mu.Unlock()
	return err
}

func podsOf(ctx context.Context, o Options) (map[types.UID]bool, error) {
	list, err := o.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", o.NodeName).String()})
	if err != nil {
		return nil, err
	}
	keep := map[types.UID]bool{}
	for _, p := range list.Items {
		keep[p.UID] = true
	}
	return keep, nil
}

// lazyPods serves the node API from the runtime once it is open.
type lazyPods func() (*podruntime.Runtime, error)

func (p lazyPods) ContainerLog(ctx context.Context, namespace, pod, container string, previous bool) (logs.File, error) {
	rt, err := p()
	if err != nil {
		return logs.File{}, err
	}
	return rt.ContainerLog(ctx, namespace, pod, container, previous)
}

func (p lazyPods) ExecInPod(ctx context.Context, namespace, pod, container string, cmd []string,
	stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan nodeapi.TerminalSize) (int, error) {
	rt, err := p()
	if err != nil {
		return 0, err
	}
	return rt.ExecInPod(ctx, namespace, pod, container, cmd, stdin, stdout, stderr, tty, resize)
}

func (p lazyPods) AttachToPod(ctx context.Context, namespace, pod, container string,
	stdin io.Reader, stdout, stderr io.Writer, tty bool, resize <-chan nodeapi.TerminalSize) error {
	rt, err := p()
	if err != nil {
		return err
	}
	return rt.AttachToPod(ctx, namespace, pod, container, stdin, stdout, stderr, tty, resize)
}

func (p lazyPods) PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	rt, err := p()
	if err != nil {
		stream.Close()
		return err
	}
	return rt.PortForward(ctx, namespace, pod, port, stream)
}

// detectCapacity reads this machine's CPUs, memory and the data
// directory's disk size; pods are capped at the kubelet's default 110.
func detectCapacity(dataDir string) corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
	}
	if kb := memTotalKB(); kb > 0 {
		c[corev1.ResourceMemory] = *resource.NewQuantity(kb*1024, resource.BinarySI)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dataDir, &st); err == nil {
		c[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)
	}
	return c
}

func memTotalKB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// nodeInfo describes this machine as the kubelet does, its files read in
// host (the root file system); an identity file that cannot be read leaves
// its field empty, as the kubelet leaves it.
func nodeInfo(host fs.FS, kubeletVersion string) corev1.NodeSystemInfo {
	info := corev1.NodeSystemInfo{
		OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH, KubeletVersion: kubeletVersion,
		OSImage: osImage(host), MachineID: readTrimmed(host, "etc/machine-id"), BootID: readTrimmed(host, "proc/sys/kernel/random/boot_id"),
		// Where cAdvisor, and so the kubelet, reads it on x86 and arm64.
		SystemUUID: readTrimmed(host, "sys/class/dmi/id/product_uuid"),
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		info.KernelVersion = unix.ByteSliceToString(u.Release[:])
	}
	return info
}

func readTrimmed(host fs.FS, path string) string {
	b, _ := fs.ReadFile(host, path)
	return string(bytes.TrimSpace(b))
}

func osImage(host fs.FS) string {
	b, err := fs.ReadFile(host, "etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}
