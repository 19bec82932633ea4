//go:build linux

package containerd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/skiffkube/skiff/kubelet/logdriver"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// killWait bounds how long a SIGKILLed container may take to be reaped;
// deleteTimeout how long a task or container deletion may take once begun.
const (
	killWait      = time.Minute
	deleteTimeout = 30 * time.Second
)

// containerID is stable for (pod, container, attempt), so a create retried
// after a crash finds the container it already made. It stays within
// containerd's 76-character ID limit and readable in `ctr containers ls`.
func containerID(cfg krt.ContainerConfig) string {
	sum := sha256.Sum256([]byte(cfg.PodUID + "/" + cfg.Name + "/" + strconv.Itoa(cfg.Attempt)))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(cfg.Name))
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("%s-%d-%s", name, cfg.Attempt, hex.EncodeToString(sum[:])[:16])
}

// podCgroup is the pod's cgroup parent.
func (r *Runtime) podCgroup(podUID string) string {
	return r.cgroupRoot + "/pod" + podUID
}

// lockFor returns the mutex serialising exit handling of one container.
func (r *Runtime) lockFor(id string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.stopping[id]
	if !ok {
		m = &sync.Mutex{}
		r.stopping[id] = m
	}
	return m
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	delete(r.stopping, id)
	r.mu.Unlock()
}

func validPodUID(uid string) error {
	if uid == "" || len(uid) > 64 {
		return fmt.Errorf("%w: pod UID %q: want 1-64 characters", krt.ErrInvalidConfig, uid)
	}
	for _, r := range uid {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%w: pod UID %q: only letters, digits, '-' and '_' are allowed", krt.ErrInvalidConfig, uid)
		}
	}
	return nil
}

// CreateContainer makes the container's snapshot and spec. The image must
// be present (EnsureImage first).
func (r *Runtime) CreateContainer(ctx context.Context, cfg krt.ContainerConfig) (string, error) {
	ctx = r.ns(ctx)
	if err := validPodUID(cfg.PodUID); err != nil {
		return "", err
	}
	if cfg.Name == "" || cfg.Attempt < 0 {
		return "", fmt.Errorf("%w: container needs a name and a non-negative attempt", krt.ErrInvalidConfig)
	}
	if cfg.LogPath != "" && !filepath.IsAbs(cfg.LogPath) {
		return "", fmt.Errorf("%w: log path %q is not absolute", krt.ErrInvalidConfig, cfg.LogPath)
	}
	name, err := normalizeRef(cfg.Image)
	if err != nil {
		return "", err
	}
	img, err := r.c.GetImage(ctx, name)
	if err != nil {
		return "", translate(err, "image "+name)
	}
	id := containerID(cfg)
	cgroupPath := r.podCgroup(cfg.PodUID) + "/" + id
	opts, err := r.specOpts(ctx, img, cfg, cgroupPath)
	if err != nil {
		return "", err
	}
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	for k, v := range map[string]string{
		labelPodUID:       cfg.PodUID,
		labelPodName:      cfg.PodName,
		labelPodNamespace: cfg.PodNamespace,
		labelName:         cfg.Name,
		labelAttempt:      strconv.Itoa(cfg.Attempt),
		labelLogPath:      cfg.LogPath,
		labelCgroup:       cgroupPath,
	} {
		labels[k] = v
	}
	if cfg.Stdin {
		labels[labelStdin] = "true"
		labels[labelStdinOnce] = strconv.FormatBool(cfg.StdinOnce)
	}
	if cfg.TTY {
		labels[labelTTY] = "true"
	}
	if cfg.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
			return "", fmt.Errorf("container %s log directory: %w", cfg.Name, err)
		}
	}
	_, err = r.c.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.snapshotter),
		client.WithNewSnapshot(id, img),
		client.WithRuntime(runcRuntime, nil),
		client.WithNewSpec(opts...),
		client.WithContainerLabels(labels),
	)
	if errdefs.IsAlreadyExists(err) {
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("create container %s of pod %s: %w", cfg.Name, cfg.PodUID, err)
	}
	return id, nil
}

// StartContainer creates the container's task (its process, with output
// appended to the log file by the shim) and starts it.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return translate(err, "start container "+id)
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return translate(err, "start container "+id)
	}
	if labels[labelExitCode] != "" {
		return fmt.Errorf("start container %s: it has already run; create a new attempt", id)
	}
	creator := cio.NullIO
	var held *stdio
	if labels[labelStdin] == "true" {
		if task, err := c.Task(ctx, nil); err == nil {
			// A retried start: the task holds its FIFOs already.
			if st, serr := task.Status(ctx); serr == nil && st.Status != client.Created {
				return nil
			}
			return fmt.Errorf("start container %s: its task exists but was never started", id)
		}
		// The shim connects stdin only for FIFO IO: the agent holds it and
		// writes the output to the log (stdio_linux.go).
		held, err = r.openIO(id, labels[labelLogPath], labels[labelTTY] == "true", labels[labelStdinOnce] == "true", true)
		if err != nil {
			return fmt.Errorf("start container %s: %w", id, err)
		}
		creator = func(string) (cio.IO, error) { return held.dio, nil }
	} else if p := labels[labelLogPath]; p != "" {
		uri, err := logdriver.URI(r.logDriver, p)
		if err != nil {
			return fmt.Errorf("start container %s: %w", id, err)
		}
		creator = cio.LogURI(uri)
	}
	task, err := c.NewTask(ctx, creator)
	if err != nil && held != nil {
		r.dropIO(id, false)
	}
	if errdefs.IsAlreadyExists(err) {
		if task, err = c.Task(ctx, nil); err == nil {
			if st, serr := task.Status(ctx); serr == nil && st.Status != client.Created {
				return nil // already started
			}
		}
	}
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	// The start time is taken before Start: a process that exits at once is
	// reaped (and its exit time recorded) before Start returns, and its
	// start must not come out later than its finish.
	startedAt := time.Now().UTC()
	if err := task.Start(ctx); err != nil {
		dctx, cancel := detached(ctx)
		defer cancel()
		if _, derr := task.Delete(dctx, client.WithProcessKill); derr != nil && !errdefs.IsNotFound(derr) {
			r.log.Warn("delete task after failed start", "container", id, "err", derr)
		}
		if held != nil {
			r.forgetIO(id)
		}
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{labelStartedAt: startedAt.Format(time.RFC3339Nano)}); err != nil {
		return fmt.Errorf("start container %s: record start time: %w", id, err)
	}
	return nil
}

// StopContainer sends SIGTERM, waits up to grace, then SIGKILLs every
// process of the container and waits for it to be reaped. The exit is then
// recorded as ContainerStatus reports it.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ns(ctx)
	l := r.lockFor(id)
	l.Lock()
	defer l.Unlock()
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return translate(err, "stop container "+id)
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil // never started, or already finished and recorded
	}
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	if st.Status == client.Stopped {
		return r.finish(ctx, c, task)
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	if grace > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("stop container %s: SIGTERM: %w", id, err)
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-exited:
			return r.finish(ctx, c, task)
		case <-timer.C:
			r.log.Info("grace period over, killing", "container", id, "grace", grace)
		case <-ctx.Done():
			return fmt.Errorf("stop container %s: %w", id, ctx.Err())
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("stop container %s: SIGKILL: %w", id, err)
	}
	select {
	case <-exited:
		return r.finish(ctx, c, task)
	case <-time.After(killWait):
		return fmt.Errorf("stop container %s: not reaped %v after SIGKILL", id, killWait)
	case <-ctx.Done():
		return fmt.Errorf("stop container %s: %w", id, ctx.Err())
	}
}

// finish records a stopped task's exit on the container (code, reason,
// time) and deletes the task. OOM kills are read from the container's
// cgroup before the task's deletion removes it. Callers hold lockFor(id).
func (r *Runtime) finish(ctx context.Context, c client.Container, task client.Task) error {
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("container %s exit status: %w", c.ID(), err)
	}
	if st.Status != client.Stopped {
		return errStillRunning
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return translate(err, "container "+c.ID())
	}
	code := int(st.ExitStatus)
	reason := krt.ReasonError
	switch {
	case r.cgroups.oomKills(labels[labelCgroup]) > 0:
		reason = krt.ReasonOOMKilled
	case code == 0:
		reason = krt.ReasonCompleted
	}
	finished := st.ExitTime
	if finished.IsZero() {
		finished = time.Now()
	}
	if _, err := c.SetLabels(ctx, map[string]string{
		labelExitCode:   strconv.Itoa(code),
		labelReason:     reason,
		labelFinishedAt: finished.UTC().Format(time.RFC3339Nano),
	}); err != nil {
		return fmt.Errorf("container %s: record exit: %w", c.ID(), err)
	}
	dctx, cancel := detached(ctx)
	defer cancel()
	if _, err := task.Delete(dctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("container %s: delete task: %w", c.ID(), err)
	}
	r.forgetIO(c.ID())
	return nil
}

// ContainerStatus reports the container's state. A container found exited
// has its exit recorded and its task deleted on the way.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (krt.ContainerStatus, error) {
	ctx = r.ns(ctx)
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return krt.ContainerStatus{}, translate(err, "container "+id)
	}
	return r.status(ctx, c)
}

func (r *Runtime) status(ctx context.Context, c client.Container) (krt.ContainerStatus, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return krt.ContainerStatus{}, translate(err, "container "+c.ID())
	}
	s := statusFromLabels(info.ID, info.Image, info.CreatedAt, info.Labels)
	if s.State == krt.StateExited {
		return s, nil
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		if !s.StartedAt.IsZero() {
			// Started, but the task vanished without its exit being
			// recorded (deleted behind the agent's back).
			s.State, s.ExitCode, s.Reason = krt.StateExited, client.UnknownExitStatus, krt.ReasonError
		}
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("container %s task: %w", c.ID(), err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return s, fmt.Errorf("container %s task status: %w", c.ID(), err)
	}
	switch st.Status {
	case client.Running, client.Paused, client.Pausing:
		s.State, s.Pid = krt.StateRunning, task.Pid()
		return s, nil
	case client.Created:
		s.State = krt.StateCreated
		return s, nil
	case client.Stopped:
		l := r.lockFor(c.ID())
		l.Lock()
		err := r.finish(ctx, c, task)
		l.Unlock()
		if err != nil && !errdefs.IsNotFound(err) {
			return s, err
		}
		labels, lerr := c.Labels(ctx)
		if lerr != nil {
			return s, translate(lerr, "container "+c.ID())
		}
		return statusFromLabels(info.ID, info.Image, info.CreatedAt, labels), nil
	default:
		s.State = krt.StateUnknown
		return s, nil
	}
}

func statusFromLabels(id, image string, created time.Time, labels map[string]string) krt.ContainerStatus {
	s := krt.ContainerStatus{
		ID:           id,
		PodUID:       labels[labelPodUID],
		PodNamespace: labels[labelPodNamespace],
		PodName:      labels[labelPodName],
		Name:         labels[labelName],
		Attempt:      atoi(labels[labelAttempt]),
		Image:        image,
		State:        krt.StateCreated,
		CreatedAt:    created,
		StartedAt:    parseTime(labels[labelStartedAt]),
		LogPath:      labels[labelLogPath],
		Labels:       labels,
	}
	if code, ok := labels[labelExitCode]; ok {
		s.State = krt.StateExited
		s.ExitCode = atoi(code)
		s.Reason = labels[labelReason]
		s.FinishedAt = parseTime(labels[labelFinishedAt])
	}
	return s
}

// ListContainers lists skiff's containers, those of one pod if asked.
func (r *Runtime) ListContainers(ctx context.Context, filter krt.ListFilter) ([]krt.ContainerStatus, error) {
	ctx = r.ns(ctx)
	var filters []string
	if filter.PodUID != "" {
		if err := validPodUID(filter.PodUID); err != nil {
			return nil, err
		}
		filters = append(filters, fmt.Sprintf("labels.%q==%s", labelPodUID, filter.PodUID))
	}
	cs, err := r.c.Containers(ctx, filters...)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]krt.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		s, err := r.status(ctx, c)
		if errdefs.IsNotFound(err) || errors.Is(err, krt.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// RemoveContainer kills the container if it still runs and deletes it
// with its snapshot. Removing a missing container is not an error.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	l := r.lockFor(id)
	l.Lock()
	defer l.Unlock()
	c, err := r.c.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		r.forget(id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("remove container %s: %w", id, err)
	default:
		if st, err := task.Status(ctx); err == nil && st.Status != client.Stopped {
			exited, werr := task.Wait(ctx)
			if werr != nil {
				return fmt.Errorf("remove container %s: %w", id, werr)
			}
			if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("remove container %s: SIGKILL: %w", id, err)
			}
			select {
			case <-exited:
			case <-time.After(killWait):
				return fmt.Errorf("remove container %s: not reaped %v after SIGKILL", id, killWait)
			case <-ctx.Done():
				return fmt.Errorf("remove container %s: %w", id, ctx.Err())
			}
		}
		dctx, cancel := detached(ctx)
		defer cancel()
		if _, err := task.Delete(dctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove container %s: delete task: %w", id, err)
		}
	}
	r.forgetIO(id)
	dctx, cancel := detached(ctx)
	defer cancel()
	if err := c.Delete(dctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	r.forget(id)
	return nil
}

// detached is for the steps that must not stop halfway when the caller
// gives up (an agent shutting down): deleting a task, which also shuts its
// shim down, and a container with its snapshot. A delete cancelled midway
// leaves a shim running with nothing left to serve.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
}

// RemovePod removes the pod's cgroup parent. It fails while a process of
// the pod still runs.
func (r *Runtime) RemovePod(ctx context.Context, podUID string) error {
	if err := validPodUID(podUID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.cgroups.remove(r.podCgroup(podUID))
}

// PodCgroupExists reports whether any hierarchy still has the pod's cgroup.
func (r *Runtime) PodCgroupExists(podUID string) bool {
	return r.cgroups.exists(r.podCgroup(podUID))
}
