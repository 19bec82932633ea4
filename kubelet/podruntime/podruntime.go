package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/crashloop"
	"github.com/skiffkube/skiff/kubelet/network"
	"github.com/skiffkube/skiff/kubelet/prober"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
	"github.com/skiffkube/skiff/kubelet/satoken"
)

// Network is what podruntime needs of the pod network (network.Manager).
type Network interface {
	SetUpWithIP(ctx context.Context, podID string, ip net.IP) (*network.Pod, error)
	TearDown(ctx context.Context, podID string) error
	// Pods lists the pod IDs holding a network here (for orphan clean-up).
	Pods() ([]string, error)
}

// LabelImageID is the container label holding the digest of the image the
// container was created from (image garbage collection reads it).
const LabelImageID = labelImageID

// Labels podruntime adds to the containers it creates.
const (
	labelImageID      = "skiff.io/image-id"
	labelBackoffLevel = "skiff.io/backoff-level"
	// labelSpecImage is the image as the container's spec named it when
	// it was created, to tell when the spec changed (definitionChanged).
	labelSpecImage = "skiff.io/spec-image"
)

// Image pull back-off timing, as the kubelet's (CrashLoopBackOff's is
// kubelet/crashloop's).
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// Defaults for Config's zero values.
const (
	DefaultLogDir = "/var/log/pods"
)

// Config wires the pod runtime.
type Config struct {
	// Containers runs the containers (containerd in production).
	Containers krt.Runtime
	// Network gives pods their network namespaces (network.Manager).
	Network Network
	// PodDir holds per-pod state such as emptyDir volumes (required;
	// <data-dir>/agent/pods in production).
	PodDir string
	// Objects reads ConfigMaps and Secrets for env and volumes; without
	// it, containers that need them wait with CreateContainerConfigError.
	// If it is also a satoken.Requester, projected serviceAccountToken
	// sources get tokens through it.
	Objects ObjectGetter
	// LogDir holds container logs (default /var/log/pods).
	LogDir string
	Logger *slog.Logger
	// Recorder, when set, receives the container Events the kubelet
	// records from its runtime side: Pulling/Pulled, Unhealthy (failed
	// probes), Killing (a container restarted by its probes).
	Recorder record.EventRecorder
	// Now is the clock for back-off decisions (default time.Now).
	Now func() time.Time
}

// Runtime implements agent.Runtime with real containers.
type Runtime struct {
	c      krt.Runtime
	net    Network
	podDir string
	logDir string
	log    *slog.Logger
	rec    record.EventRecorder
	now    func() time.Time

	objects ObjectGetter
	// rro: the containers' runtime makes recursively read-only mounts
	// (krt.RecursiveReadOnlyMounts).
	rro bool
	// tokens keeps the pods' service account tokens; nil when Objects
	// cannot request them.
	tokens *satoken.Manager

	probes     *prober.Manager
	stopProbes context.CancelFunc

	// pullMu guards pulls: failed image pulls back off per pod and image
	// (pullKey), as the kubelet's ImagePullBackOff, so a missing image is
	// not fetched on every sync, and one pod's missing pull secret does not
	// hold back another pod's pull.
	pullMu sync.Mutex
	pulls  map[string]pullBackoff

	// changed tells the agent which pod changed on its own (an exit, a
	// probe verdict); nil until the agent asks (agent.ChangeNotifier).
	changed atomic.Pointer[func(types.UID)]
}

type pullBackoff struct {
	failures int
	next     time.Time
	lastErr  string
}

var (
	_ agent.Runtime              = (*Runtime)(nil)
	_ agent.ChangeNotifier       = (*Runtime)(nil)
	_ agent.RuntimeHandlerLister = (*Runtime)(nil)
)

// New checks cfg and returns the runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Containers == nil {
		return nil, errors.New("podruntime: Containers is required")
	}
	if cfg.Network == nil {
		return nil, errors.New("podruntime: Network is required")
	}
	if cfg.PodDir == "" || !filepath.IsAbs(cfg.PodDir) {
		return nil, fmt.Errorf("podruntime: PodDir %q must be an absolute path", cfg.PodDir)
	}
	if cfg.LogDir == "" {
		cfg.LogDir = DefaultLogDir
	}
	if !filepath.IsAbs(cfg.LogDir) {
		return nil, fmt.Errorf("podruntime: LogDir %q must be an absolute path", cfg.LogDir)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		c: cfg.Containers, net: cfg.Network, objects: cfg.Objects, podDir: cfg.PodDir, logDir: cfg.LogDir, log: cfg.Logger, rec: cfg.Recorder, now: cfg.Now,
		probes: prober.NewManager(ctx), stopProbes: cancel, pulls: map[string]pullBackoff{},
	}
	if m, ok := cfg.Containers.(krt.RecursiveReadOnlyMounts); ok {
		r.rro = m.RecursiveReadOnlyMounts()
	}
	if req, ok := cfg.Objects.(satoken.Requester); ok {
		r.tokens = satoken.New(req, cfg.Now)
	}
	if w, ok := cfg.Containers.(krt.ExitWatcher); ok {
		go w.WatchExits(ctx, func(_, podUID string) { r.notify(types.UID(podUID)) })
	}
	return r, nil
}

// Stop ends the probe workers and the exit watch; containers keep running.
func (r *Runtime) Stop() { r.stopProbes() }

// OnPodChange sets who hears of pods whose containers exit or whose probe
// verdicts turn (agent.ChangeNotifier).
func (r *Runtime) OnPodChange(changed func(types.UID)) { r.changed.Store(&changed) }

func (r *Runtime) notify(uid types.UID) {
	if f := r.changed.Load(); f != nil {
		(*f)(uid)
	}
}

// RuntimeHandlers are the node's runtime handlers
// (agent.RuntimeHandlerLister): one, the default, as containerd's CRI
// plugin reports its runc handler, with recursive read-only mounts where
// the containers' runtime makes them, and no user namespaces, which skiff
// does not implement (so the agent refuses pods with hostUsers: false
// before they reach this runtime).
func (r *Runtime) RuntimeHandlers() []corev1.NodeRuntimeHandler {
	return agent.DefaultRuntimeHandlers(r.rro)
}

// Name is the container runtime's name for node status.
func (r *Runtime) Name() string { return "containerd" }

// Version is the container runtime's version.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	_, v, err := r.c.Version(ctx)
	return v, err
}

// NeedsResync asks the agent to call SyncPod periodically as well: exit
// notices can be missed (containerd restarting), and configMap and secret
// volumes follow their objects at each sync.
func (r *Runtime) NeedsResync() bool { return true }

func (r *Runtime) podPath(uid types.UID) string { return filepath.Join(r.podDir, string(uid)) }

// SyncPod takes the pod one step towards its spec and reports its containers.
func (r *Runtime) SyncPod(ctx context.Context, pod *corev1.Pod, podIP string) (agent.PodState, error) {
	var state agent.PodState
	uid := string(pod.UID)
	netnsPath := ""
	if !pod.Spec.HostNetwork {
		ip := net.ParseIP(podIP)
		if ip == nil {
			return state, fmt.Errorf("pod %s/%s: bad pod IP %q", pod.Namespace, pod.Name, podIP)
		}
		pn, err := r.net.SetUpWithIP(ctx, uid, ip)
		if err != nil {
			return state, fmt.Errorf("pod %s/%s network: %w", pod.Namespace, pod.Name, err)
		}
		netnsPath = pn.NetnsPath
	}
	if err := r.writeEtcFiles(pod, podIP); err != nil {
		return state, err
	}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			if err := os.MkdirAll(emptyDirPath(r.podPath(pod.UID), v.Name), 0o777); err != nil {
				return state, fmt.Errorf("pod %s/%s volume %s: %w", pod.Namespace, pod.Name, v.Name, err)
			}
		}
	}
	existing, err := r.c.ListContainers(ctx, krt.ListFilter{PodUID: uid})
	if err != nil {
		return state, err
	}
	history := attemptsByName(existing)
	failed := r.writeVolumes(ctx, pod, podIP)
	sc := syncCtx{pod: pod, podIP: podIP, netnsPath: netnsPath, failedVolumes: failed, claimPaths: r.claimVolumes(ctx, pod, failed),
		recheck: &state.RecheckAfter}

	if hasSidecars(pod) && podFinished(pod, history) {
		return r.finishPod(ctx, pod)
	}
	initsDone := r.syncInitContainers(ctx, sc, history, &state)
	policy := pod.Spec.RestartPolicy
	if policy == "" {
		policy = corev1.RestartPolicyAlways
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !initsDone {
			state.Containers = append(state.Containers, waiting(c, "PodInitializing", ""))
			continue
		}
		state.Containers = append(state.Containers, r.syncContainer(ctx, sc, c, history[c.Name], policy))
	}
	if hasSidecars(pod) && finishedIn(pod, state) {
		// The app containers ended for good in this very sync (one
		// that exits at once): the sidecars go now, not at the next
		// sync, so that the pod never reads as finished with its
		// sidecars running.
		return r.finishPod(ctx, pod)
	}
	return state, nil
}

// syncInitContainers takes the init containers one step, as the kubelet's
// computeInitContainerActions, and says whether the app containers may
// run. Init containers start one at a time, in order: the next starts once
// the one before exited with 0 or, for a sidecar (restartPolicy Always),
// once it runs and has started (its startup probe passed, its postStart
// hook done). Sidecars restart whenever they exit, whatever the pod's
// restartPolicy. Init containers already past (a later one has run, or an
// app container has: the pod has initialized) are not waited for again:
// a sidecar restarting then holds nothing back, and the others are not run
// again.
func (r *Runtime) syncInitContainers(ctx context.Context, sc syncCtx, history map[string][]krt.ContainerStatus, state *agent.PodState) bool {
	pod := sc.pod
	initPolicy := pod.Spec.RestartPolicy
	if initPolicy == corev1.RestartPolicyAlways || initPolicy == "" {
		initPolicy = corev1.RestartPolicyOnFailure
	}
	past := initsPast(pod, history)
	blocked := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		hist := history[c.Name]
		var st corev1.ContainerStatus
		switch {
		case i < past && isSidecar(c):
			st = r.syncContainer(ctx, sc, c, hist, corev1.RestartPolicyAlways)
		case i < past:
			st = reportLatest(c, hist, "PodInitializing")
		case blocked:
			st = waiting(c, "PodInitializing", "")
		case isSidecar(c):
			st = r.syncContainer(ctx, sc, c, hist, corev1.RestartPolicyAlways)
			blocked = st.State.Running == nil || st.Started == nil || !*st.Started
		default:
			st = r.syncContainer(ctx, sc, c, hist, initPolicy)
			blocked = st.State.Terminated == nil || st.State.Terminated.ExitCode != 0
		}
		state.InitContainers = append(state.InitContainers, st)
	}
	return !blocked
}

// initsPast is how many of the pod's init containers, in order, are past:
// all of them once an app container has run; else those before the last
// one that has run (that one is where initialization stands).
func initsPast(pod *corev1.Pod, history map[string][]krt.ContainerStatus) int {
	for _, c := range pod.Spec.Containers {
		if len(history[c.Name]) > 0 {
			return len(pod.Spec.InitContainers)
		}
	}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		if len(history[pod.Spec.InitContainers[i].Name]) > 0 {
			return i
		}
	}
	return 0
}

// isSidecar says whether an init container is a sidecar (restartPolicy Always).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func hasSidecars(pod *corev1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// restarts says whether restartPolicy starts a container again after it
// exited with code.
func restarts(policy corev1.RestartPolicy, code int) bool {
	return policy == corev1.RestartPolicyAlways || policy == "" || policy == corev1.RestartPolicyOnFailure && code != 0
}

// podFinished says, from what ran, whether the pod is done for good as the
// kubelet's computePodActions sees it (it kills the pod then, sidecars
// included, and starts none): every app container exited and is not to be
// restarted, or an init container that is not a sidecar failed under
// restartPolicy Never.
func podFinished(pod *corev1.Pod, history map[string][]krt.ContainerStatus) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if h := history[c.Name]; !isSidecar(c) && len(h) > 0 && h[0].State == krt.StateExited && h[0].ExitCode != 0 &&
			pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return true
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return false
	}
	for _, c := range pod.Spec.Containers {
		h := history[c.Name]
		if len(h) == 0 || h[0].State != krt.StateExited || restarts(pod.Spec.RestartPolicy, h[0].ExitCode) {
			return false
		}
	}
	return true
}

// finishedIn says the same as podFinished from the statuses of a sync.
func finishedIn(pod *corev1.Pod, state agent.PodState) bool {
	for i, st := range state.InitContainers {
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 && !isSidecar(&pod.Spec.InitContainers[i]) &&
			pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return true
		}
	}
	if len(state.Containers) == 0 {
		return false
	}
	for _, st := range state.Containers {
		if t := st.State.Terminated; t == nil || restarts(pod.Spec.RestartPolicy, int(t.ExitCode)) {
			return false
		}
	}
	return true
}

// finishPod stops the sidecars of a pod done for good, as the kubelet kills
// such a pod: SIGTERM with the pod's grace period (after their preStop
// hooks), the last sidecar first; none is started again. It reports every
// container as it ended, for the agent to see the pod complete or fail.
func (r *Runtime) finishPod(ctx context.Context, pod *corev1.Pod) (agent.PodState, error) {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{PodUID: string(pod.UID)})
	if err != nil {
		return agent.PodState{}, err
	}
	var running []krt.ContainerStatus
	for _, s := range list {
		if s.State != krt.StateRunning {
			continue
		}
		if c := findContainer(pod, s.Name); c != nil {
			r.event(pod, c, corev1.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
		}
		running = append(running, s)
	}
	if len(running) > 0 {
		if err := r.stopContainers(ctx, pod, running, terminationGrace(pod, nil)); err != nil {
			return agent.PodState{}, err
		}
		if list, err = r.c.ListContainers(ctx, krt.ListFilter{PodUID: string(pod.UID)}); err != nil {
			return agent.PodState{}, err
		}
	}
	for _, s := range list {
		r.forgetProbes(s.ID)
	}
	return reportAll(pod, attemptsByName(list), "PodInitializing"), nil
}

// syncCtx is what every container of one SyncPod call shares.
type syncCtx struct {
	pod           *corev1.Pod
	podIP         string
	netnsPath     string
	failedVolumes map[string]error
	claimPaths    map[string]string // persistentVolumeClaim volume → host directory
	recheck       *time.Duration    // the pod state's RecheckAfter
}

// recheckIn asks for the pod to be synced again within d (a back-off
// ending), keeping the soonest of such requests.
func (sc syncCtx) recheckIn(d time.Duration) {
	if d > 0 && (*sc.recheck == 0 || d < *sc.recheck) {
		*sc.recheck = d
	}
}

// syncContainer starts, restarts or leaves one container and reports it.
// hist is its attempts, newest first.
func (r *Runtime) syncContainer(ctx context.Context, sc syncCtx, c *corev1.Container, hist []krt.ContainerStatus, policy corev1.RestartPolicy) corev1.ContainerStatus {
	if len(hist) == 0 {
		return r.startAttempt(ctx, sc, c, 0, 0, nil)
	}
	latest := hist[0]
	var previous *krt.ContainerStatus
	if len(hist) > 1 {
		previous = &hist[1]
	}
	if latest.State != krt.StateRunning {
		r.forgetProbes(latest.ID)
	}
	changed := definitionChanged(sc.pod, c, latest)
	switch latest.State {
	case krt.StateRunning:
		if changed {
			return r.restartChanged(ctx, sc, c, hist)
		}
		r.ensureProbes(sc, c, latest.ID)
		// A failed liveness probe, or a startup probe that ran out of
		// attempts, restarts the container (restartPolicy decides what
		// follows its exit).
		for _, p := range []struct {
			kind  prober.Kind
			probe *corev1.Probe
		}{{prober.Liveness, c.LivenessProbe}, {prober.Startup, c.StartupProbe}} {
			res, reason := r.probes.Result(prober.Key{ContainerID: latest.ID, Kind: p.kind})
			if res != prober.Failure {
				continue
			}
			grace := terminationGrace(sc.pod, p.probe)
			r.log.Info("container failed its "+string(p.kind)+" probe, restarting", "pod", sc.pod.Namespace+"/"+sc.pod.Name,
				"container", c.Name, "reason", reason, "grace", grace)
			r.event(sc.pod, c, corev1.EventTypeNormal, "Killing", "Container %s failed %s probe, will be restarted", c.Name, p.kind)
			if err := r.c.StopContainer(ctx, latest.ID, grace); err != nil {
				r.log.Warn("stop container after "+string(p.kind)+" failure", "container", latest.ID, "err", err)
			}
			r.forgetProbes(latest.ID)
			return r.reread(ctx, c, latest.ID, previous)
		}
		return r.withProbes(report(c, latest, previous), c, latest.ID)
	case krt.StateCreated:
		// Created but never started (the agent stopped in between).
		if err := r.c.StartContainer(ctx, latest.ID); err != nil {
			r.removeQuietly(ctx, latest.ID)
			return waiting(c, "RunContainerError", err.Error())
		}
		return r.started(ctx, sc, c, latest.ID, previous)
	case krt.StateExited:
		restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && latest.ExitCode != 0)
		if !restart {
			return report(c, latest, previous)
		}
		delay, next := crashloop.Next(atoi(latest.Labels[labelBackoffLevel]), latest.FinishedAt.Sub(latest.StartedAt))
		if changed {
			// A new definition starts at once, its back-off afresh: the
			// kubelet keys back-off by the container's spec hash, and
			// this restart is the new key's first, as a first exit's.
			delay, next = crashloop.Next(0, 0)
		}
		// A delay of 0 (a first exit) restarts the container in this
		// sync: no waiting state, nothing to look at again.
		if wait := latest.FinishedAt.Add(delay).Sub(r.now()); wait > 0 {
			sc.recheckIn(wait)
			st := report(c, latest, nil)
			st.LastTerminationState = st.State
			st.State = corev1.ContainerState{Waiting: crashloop.Waiting(sc.pod, c.Name, delay)}
			st.Ready = false
			return st
		}
		// Keep the latest attempt for `logs --previous`; older ones go.
		for _, old := range hist[1:] {
			r.removeQuietly(ctx, old.ID)
		}
		return r.startAttempt(ctx, sc, c, latest.Attempt+1, next, &latest)
	default:
		return report(c, latest, previous)
	}
}

// definitionChanged says whether the container latest runs was created
// from another spec than c, so that it is to be restarted, as the kubelet
// compares a container's spec hash: its image, the one field of a
// container a pod update may change (the kubelet's hash covers name and
// image since 1.31). It holds for app containers and sidecars, not for the
// other init containers, which the kubelet does not run again. A
// container created before the label was recorded counts as unchanged.
func definitionChanged(pod *corev1.Pod, c *corev1.Container, latest krt.ContainerStatus) bool {
	was, recorded := latest.Labels[labelSpecImage]
	if !recorded || was == c.Image {
		return false
	}
	return isSidecar(c) || findInit(pod, c.Name) == nil
}

// findInit returns the pod's init container named name, or nil.
func findInit(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// restartChanged stops the running container of hist (its newest attempt)
// whose spec changed, as the kubelet kills it (preStop hook, then SIGTERM
// with the pod's grace period), and starts the next attempt from the new
// spec at once, whatever the restartPolicy and without back-off.
func (r *Runtime) restartChanged(ctx context.Context, sc syncCtx, c *corev1.Container, hist []krt.ContainerStatus) corev1.ContainerStatus {
	latest := hist[0]
	message := fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
	if isSidecar(c) {
		message = fmt.Sprintf("Init container %s definition changed", c.Name) // the kubelet's words for a sidecar
	}
	r.log.Info("container definition changed, restarting", "pod", sc.pod.Namespace+"/"+sc.pod.Name, "container", c.Name,
		"image", c.Image, "was", latest.Labels[labelSpecImage])
	r.event(sc.pod, c, corev1.EventTypeNormal, "Killing", "%s", message)
	grace := r.preStop(ctx, sc.pod, latest, terminationGrace(sc.pod, nil))
	r.forgetProbes(latest.ID)
	if err := r.c.StopContainer(ctx, latest.ID, grace); err != nil {
		r.log.Warn("stop container whose definition changed", "container", latest.ID, "err", err)
		var previous *krt.ContainerStatus
		if len(hist) > 1 {
			previous = &hist[1]
		}
		return r.reread(ctx, c, latest.ID, previous) // still running: the next sync tries again
	}
	stopped, err := r.c.ContainerStatus(ctx, latest.ID)
	if err != nil {
		return waiting(c, "ContainerStatusUnknown", err.Error())
	}
	// The new definition's back-off starts afresh (the kubelet keys it by
	// the spec hash). The kubelet begins it here, as for a first exit,
	// when it sees an earlier attempt that exited (hist[1], kept for
	// `logs --previous`); otherwise the new attempt is the first it knows.
	level := 0
	if len(hist) > 1 {
		_, level = crashloop.Next(0, 0)
	}
	// Keep the stopped attempt for `logs --previous`; older ones go.
	for _, old := range hist[1:] {
		r.removeQuietly(ctx, old.ID)
	}
	return r.startAttempt(ctx, sc, c, latest.Attempt+1, level, &stopped)
}

// startAttempt creates and starts attempt n of the container.
func (r *Runtime) startAttempt(ctx context.Context, sc syncCtx, c *corev1.Container, attempt, level int, previous *krt.ContainerStatus) corev1.ContainerStatus {
	pod := sc.pod
	r.pullMu.Lock()
	b, backingOff := r.pulls[pullKey(pod, c)]
	r.pullMu.Unlock()
	if backingOff && r.now().Before(b.next) {
		sc.recheckIn(b.next.Sub(r.now()))
		return withPrevious(waiting(c, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: %s", c.Image, b.lastErr)), c, previous)
	}
	img, err := r.ensureImage(ctx, pod, c)
	switch {
	case errors.Is(err, krt.ErrImageNeverPull):
		return withPrevious(waiting(c, "ErrImageNeverPull", fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)), c, previous)
	case errors.Is(err, krt.ErrInvalidConfig):
		return withPrevious(waiting(c, "InvalidImageName", err.Error()), c, previous)
	case err != nil:
		return withPrevious(waiting(c, "ErrImagePull", err.Error()), c, previous)
	}
	cfg, err := r.containerConfig(ctx, sc, c, attempt)
	if err != nil {
		return withPrevious(waiting(c, "CreateContainerConfigError", err.Error()), c, previous)
	}
	cfg.Labels = map[string]string{labelImageID: img.Digest, labelBackoffLevel: strconv.Itoa(level), labelSpecImage: c.Image}
	id, err := r.c.CreateContainer(ctx, cfg)
	if errors.Is(err, krt.ErrInvalidConfig) {
		return withPrevious(waiting(c, "CreateContainerConfigError", err.Error()), c, previous)
	}
	if err != nil {
		return withPrevious(waiting(c, "CreateContainerError", err.Error()), c, previous)
	}
	if err := r.c.StartContainer(ctx, id); err != nil {
		r.removeQuietly(ctx, id)
		return withPrevious(waiting(c, "RunContainerError", err.Error()), c, previous)
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		// The container counts as started only once its postStart hook
		// succeeds; a failed hook kills it (FailedPostStartHook) and
		// restartPolicy decides what follows.
		hctx, cancel := context.WithTimeout(ctx, terminationGrace(pod, nil)+time.Minute)
		err := r.runHook(hctx, c.Lifecycle.PostStart, c, id, sc.podIP)
		cancel()
		if err != nil {
			r.log.Warn("postStart hook failed, killing the container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
			r.event(pod, c, corev1.EventTypeWarning, "FailedPostStartHook", "%s", hookFailure(pod, c, c.Lifecycle.PostStart, err))
			if serr := r.c.StopContainer(ctx, id, terminationGrace(pod, nil)); serr != nil {
				r.log.Warn("stop after failed postStart hook", "container", id, "err", serr)
			}
		}
	}
	r.log.Info("started container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "attempt", attempt)
	return r.started(ctx, sc, c, id, previous)
}

// started reports a container just started and starts its probes at once:
// their verdicts, not a later sync, bring the pod's next change.
func (r *Runtime) started(ctx context.Context, sc syncCtx, c *corev1.Container, id string, previous *krt.ContainerStatus) corev1.ContainerStatus {
	st := r.reread(ctx, c, id, previous)
	if st.State.Running != nil {
		r.ensureProbes(sc, c, id)
	}
	return st
}

// ensureImage makes the container's image ready and records the kubelet's
// image Events: "Pulling" before a pull, then "Pulled" with how long it
// took, or "Pulled" saying the image was already present. Failures are
// recorded by the agent from the container's waiting reason.
func (r *Runtime) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (krt.Image, error) {
	policy := pullPolicy(c)
	pulling := policy == krt.PullAlways
	if policy == krt.PullIfNotPresent {
		present, err := r.c.ImagePresent(ctx, c.Image)
		pulling = err == nil && !present
	}
	if pulling {
		r.event(pod, c, corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	}
	start := time.Now()
	var creds []krt.Credential
	if policy != krt.PullNever {
		creds = r.pullCredentials(ctx, pod, c)
	}
	img, err := r.c.EnsureImage(ctx, c.Image, policy, creds...)
	r.recordPull(pullKey(pod, c), err)
	switch {
	case err != nil:
	case img.Pulled:
		took := time.Since(start)
		r.event(pod, c, corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %v (%v including waiting). Image size: %d bytes.",
			c.Image, took.Round(time.Millisecond), took.Round(time.Millisecond), img.Size)
	default:
		r.event(pod, c, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
	}
	return img, err
}

// pullKey is what a pull back-off is kept for: the pod and the image, as
// the kubelet's back-off key.
func pullKey(pod *corev1.Pod, c *corev1.Container) string {
	return string(pod.UID) + "_" + c.Image
}

// recordPull updates the pull back-off of key: 10s doubling to 5m after
// each failed pull, cleared by a success.
func (r *Runtime) recordPull(key string, err error) {
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	if err == nil || !errors.Is(err, krt.ErrImagePull) {
		delete(r.pulls, key)
		return
	}
	b := r.pulls[key]
	delay := backoffInitial << uint(min(b.failures, 5))
	if delay > backoffMax {
		delay = backoffMax
	}
	r.pulls[key] = pullBackoff{failures: b.failures + 1, next: r.now().Add(delay), lastErr: err.Error()}
}

func (r *Runtime) reread(ctx context.Context, c *corev1.Container, id string, previous *krt.ContainerStatus) corev1.ContainerStatus {
	s, err := r.c.ContainerStatus(ctx, id)
	if err != nil {
		return waiting(c, "ContainerStatusUnknown", err.Error())
	}
	return r.withProbes(report(c, s, previous), c, id)
}

// ensureProbes starts the container's probe workers; liveness and
// readiness wait for the startup probe, as on Kubernetes.
func (r *Runtime) ensureProbes(sc syncCtx, c *corev1.Container, id string) {
	pod := sc.pod
	t := prober.Target{PodIP: sc.podIP, Container: c, Exec: r.execFunc(id), Failed: func(kind prober.Kind, output string) {
		// As the kubelet: every failed run is an event; the recorder
		// folds repeats into one with a count.
		r.event(pod, c, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", probeName(kind), output)
	}, Changed: func(prober.Kind) { r.notify(pod.UID) }}
	var gate func() bool
	if c.StartupProbe != nil {
		key := prober.Key{ContainerID: id, Kind: prober.Startup}
		r.probes.Ensure(key, c.StartupProbe, t, nil)
		gate = func() bool { res, _ := r.probes.Result(key); return res == prober.Success }
	}
	if c.LivenessProbe != nil {
		r.probes.Ensure(prober.Key{ContainerID: id, Kind: prober.Liveness}, c.LivenessProbe, t, gate)
	}
	if c.ReadinessProbe != nil {
		r.probes.Ensure(prober.Key{ContainerID: id, Kind: prober.Readiness}, c.ReadinessProbe, t, gate)
	}
}

// execFunc runs probe and hook commands in container id, output to out.
func (r *Runtime) execFunc(id string) prober.ExecFunc {
	return func(ctx context.Context, cmd []string, out io.Writer) (int, error) {
		return r.c.Exec(ctx, id, krt.ExecOptions{Command: cmd, Stdout: out, Stderr: out})
	}
}

func (r *Runtime) forgetProbes(id string) {
	r.probes.Prune(func(cid string) bool { return cid != id })
}

// withProbes sets started and ready from the probes of a running container.
func (r *Runtime) withProbes(st corev1.ContainerStatus, c *corev1.Container, id string) corev1.ContainerStatus {
	if st.State.Running == nil {
		return st
	}
	started := true
	if c.StartupProbe != nil {
		res, _ := r.probes.Result(prober.Key{ContainerID: id, Kind: prober.Startup})
		started = res == prober.Success
	}
	ready := started
	if c.ReadinessProbe != nil {
		res, _ := r.probes.Result(prober.Key{ContainerID: id, Kind: prober.Readiness})
		ready = ready && res == prober.Success
	}
	st.Started, st.Ready = &started, ready
	return st
}

// terminationGrace is the probe's own grace period if set, else the pod's.
func terminationGrace(pod *corev1.Pod, p *corev1.Probe) time.Duration {
	if p != nil && p.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
}

func (r *Runtime) containerConfig(ctx context.Context, sc syncCtx, c *corev1.Container, attempt int) (krt.ContainerConfig, error) {
	pod := sc.pod
	from, err := r.envFromSources(ctx, pod, c)
	if err != nil {
		return krt.ContainerConfig{}, err
	}
	env, err := envFor(pod, c, sc.podIP, from, func(e corev1.EnvVar) (string, bool, error) {
		return r.objectEnv(ctx, pod, e)
	})
	if err != nil {
		return krt.ContainerConfig{}, err
	}
	mounts, err := mountsFor(pod, c, r.podPath(pod.UID), sc.failedVolumes, sc.claimPaths, r.rro)
	if err != nil {
		return krt.ContainerConfig{}, err
	}
	if !pod.Spec.HostNetwork {
		// Host-network pods get the node's files from the container runtime.
		mounts = append(mounts, r.etcMounts(pod, mounts)...)
	}
	hostname := podHostname(pod)
	return krt.ContainerConfig{
		PodUID:       string(pod.UID),
		PodNamespace: pod.Namespace,
		PodName:      pod.Name,
		Name:         c.Name,
		Attempt:      attempt,
		Image:        c.Image,
		Command:      expandAll(c.Command, env),
		Args:         expandAll(c.Args, env),
		Env:          env,
		WorkingDir:   c.WorkingDir,
		NetnsPath:    sc.netnsPath,
		Hostname:     hostname,
		LogPath:      logPath(r.logDir, pod, c.Name, attempt),
		Stdin:        c.Stdin,
		StdinOnce:    c.StdinOnce,
		TTY:          c.TTY,
		Mounts:       mounts,
		Resources:    resourcesFor(c),
		Security:     securityFor(pod, c),
	}, nil
}

func (r *Runtime) removeQuietly(ctx context.Context, id string) {
	if err := r.c.RemoveContainer(ctx, id); err != nil {
		r.log.Warn("remove container", "container", id, "err", err)
	}
}

// KillPod stops the pod's containers (SIGTERM, SIGKILL after grace) in
// parallel, the sidecars last (stopContainers), removes them, and releases the pod's cgroup, network, volumes
// and logs.
func (r *Runtime) KillPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	uid := string(pod.UID)
	err := r.removePodContainers(ctx, pod, grace)
	if err != nil {
		return err
	}
	r.forgetPulls(uid)
	if r.tokens != nil {
		r.tokens.ForgetPod(pod.UID)
	}
	var errs []error
	if err := r.c.RemovePod(ctx, uid); err != nil {
		errs = append(errs, err)
	}
	if err := r.net.TearDown(ctx, uid); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(r.podPath(pod.UID)); err != nil {
		errs = append(errs, err)
	}
	if pod.Name != "" {
		if err := os.RemoveAll(filepath.Join(r.logDir, pod.Namespace+"_"+pod.Name+"_"+uid)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopPod stops the pod's containers as KillPod does but leaves them in
// place, and reports how each ended (its exit code and reason), for the
// terminal status the agent writes before KillPod releases them.
func (r *Runtime) StopPod(ctx context.Context, pod *corev1.Pod, grace time.Duration) (agent.PodState, error) {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{PodUID: string(pod.UID)})
	if err != nil {
		return agent.PodState{}, err
	}
	if err := r.stopContainers(ctx, pod, list, grace); err != nil {
		return agent.PodState{}, err
	}
	if list, err = r.c.ListContainers(ctx, krt.ListFilter{PodUID: string(pod.UID)}); err != nil {
		return agent.PodState{}, err
	}
	return reportAll(pod, attemptsByName(list), "ContainerCreating"), nil
}

// reportAll reports each container of the pod as its latest attempt stands
// (history: attemptsByName), one that never ran as waiting with reason.
func reportAll(pod *corev1.Pod, history map[string][]krt.ContainerStatus, reason string) agent.PodState {
	var state agent.PodState
	for _, cs := range []struct {
		spec []corev1.Container
		out  *[]corev1.ContainerStatus
	}{{pod.Spec.InitContainers, &state.InitContainers}, {pod.Spec.Containers, &state.Containers}} {
		for i := range cs.spec {
			*cs.out = append(*cs.out, reportLatest(&cs.spec[i], history[cs.spec[i].Name], reason))
		}
	}
	return state
}

// reportLatest reports a container from its attempts, newest first,
// without acting on it; one that never ran is waiting with reason.
func reportLatest(c *corev1.Container, hist []krt.ContainerStatus, reason string) corev1.ContainerStatus {
	if len(hist) == 0 {
		return waiting(c, reason, "")
	}
	var previous *krt.ContainerStatus
	if len(hist) > 1 {
		previous = &hist[1]
	}
	return report(c, hist[0], previous)
}

// StopSandbox releases the network of a pod that completed or failed (its
// namespace, veth and address), as the kubelet stops a finished pod's
// sandbox; its containers and logs stay, stopped, until KillPod. A
// container still running is stopped first, with the pod's grace period.
// Calling it again, or KillPod after it, is harmless.
func (r *Runtime) StopSandbox(ctx context.Context, pod *corev1.Pod) error {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{PodUID: string(pod.UID)})
	if err != nil {
		return err
	}
	if err := r.stopContainers(ctx, pod, list, terminationGrace(pod, nil)); err != nil {
		return err
	}
	for _, s := range list {
		r.forgetProbes(s.ID)
	}
	if pod.Spec.HostNetwork {
		return nil
	}
	return r.net.TearDown(ctx, string(pod.UID))
}

var (
	_ agent.PodStopper     = (*Runtime)(nil)
	_ agent.SandboxStopper = (*Runtime)(nil)
)

// attemptsByName groups a pod's containers by container name, newest attempt first.
func attemptsByName(list []krt.ContainerStatus) map[string][]krt.ContainerStatus {
	history := map[string][]krt.ContainerStatus{}
	for _, s := range list {
		history[s.Name] = append(history[s.Name], s)
	}
	for _, h := range history {
		sort.Slice(h, func(i, j int) bool { return h[i].Attempt > h[j].Attempt })
	}
	return history
}

func (r *Runtime) removePodContainers(ctx context.Context, pod *corev1.Pod, grace time.Duration) error {
	uid := string(pod.UID)
	list, err := r.c.ListContainers(ctx, krt.ListFilter{PodUID: uid})
	if err != nil {
		return err
	}
	errs := []error{r.stopContainers(ctx, pod, list, grace)}
	for _, s := range list {
		r.forgetProbes(s.ID)
		if err := r.c.RemoveContainer(ctx, s.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopContainers stops the running ones of list (preStop hooks, SIGTERM,
// SIGKILL after grace) in parallel, but for the sidecars, as the kubelet
// orders a pod's termination: each runs its preStop hook at once, then
// waits, within its grace period, for the other containers and the
// sidecars after it to exit before it gets SIGTERM, so that the sidecars
// serve the app containers to their end and stop last, in reverse order.
func (r *Runtime) stopContainers(ctx context.Context, pod *corev1.Pod, list []krt.ContainerStatus, grace time.Duration) error {
	var running []krt.ContainerStatus
	for _, s := range list {
		if s.State == krt.StateRunning {
			running = append(running, s)
		}
	}
	before := stopsBefore(pod, running)
	exited := make([]chan struct{}, len(running))
	for i := range exited {
		exited[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(running))
	for i, s := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(exited[i])
			start := time.Now()
			left := r.preStop(ctx, pod, s, grace)
			if len(before[i]) > 0 && left > 0 {
				waitForTurn(ctx, exited, before[i], left)
				if left = grace - time.Since(start); left < minGrace {
					left = minGrace
				}
			}
			errc <- r.c.StopContainer(ctx, s.ID, left)
		}()
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// minGrace is the least time a container stopped with a grace period gets
// between SIGTERM and SIGKILL (the kubelet's minimum too).
const minGrace = 2 * time.Second

// stopsBefore says, for each container of running, which of the others
// must exit before it is sent SIGTERM: for a sidecar, every container that
// is not one and every sidecar declared after it; for the others, none.
func stopsBefore(pod *corev1.Pod, running []krt.ContainerStatus) [][]int {
	sidecarAt := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			sidecarAt[pod.Spec.InitContainers[i].Name] = i
		}
	}
	before := make([][]int, len(running))
	for i, s := range running {
		at, ok := sidecarAt[s.Name]
		if !ok {
			continue
		}
		for j, o := range running {
			if oat, oSidecar := sidecarAt[o.Name]; j != i && (!oSidecar || oat > at) {
				before[i] = append(before[i], j)
			}
		}
	}
	return before
}

// waitForTurn waits until the containers at indexes have exited, for at
// most d.
func waitForTurn(ctx context.Context, exited []chan struct{}, indexes []int, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, j := range indexes {
		select {
		case <-exited[j]:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// CleanupOrphans removes the containers, cgroups, networks and volumes of
// every pod not in keep (pods deleted while the agent was down). Logs of an
// orphan stay: its namespace and name are not known here for sure.
func (r *Runtime) CleanupOrphans(ctx context.Context, keep map[types.UID]bool) error {
	list, err := r.c.ListContainers(ctx, krt.ListFilter{})
	if err != nil {
		return err
	}
	orphans := map[string]bool{}
	for _, s := range list {
		if !keep[types.UID(s.PodUID)] {
			orphans[s.PodUID] = true
		}
	}
	ids, err := r.net.Pods()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !keep[types.UID(id)] {
			orphans[id] = true
		}
	}
	var errs []error
	for uid := range orphans {
		r.log.Info("removing orphaned pod", "uid", uid)
		if err := r.KillPod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
