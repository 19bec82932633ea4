//go:build linux

package containerd

import (
	"context"
	"fmt"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/typeurl/v2"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// WatchExits calls exited with the container ID and pod UID of every
// container of this runtime's namespace whose main process ends, from
// containerd's /tasks/exit events, until ctx ends. It resubscribes after
// an interruption (containerd restarting); exits that happen meanwhile
// are not reported, so callers still look now and then.
func (r *Runtime) WatchExits(ctx context.Context, exited func(containerID, podUID string)) {
	ctx = r.ns(ctx)
	filter := fmt.Sprintf(`topic=="/tasks/exit",namespace==%q`, r.namespace)
	for ctx.Err() == nil {
		events, errs := r.c.Subscribe(ctx, filter)
		r.forwardExits(ctx, events, errs, exited)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// forwardExits reads one subscription until it fails.
func (r *Runtime) forwardExits(ctx context.Context, events <-chan *events.Envelope, errs <-chan error, exited func(containerID, podUID string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-errs:
			if err != nil && ctx.Err() == nil {
				r.log.Warn("containerd event subscription ended; resubscribing", "err", err)
			}
			return
		case env := <-events:
			if env == nil {
				continue
			}
			v, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				r.log.Warn("undecodable containerd event", "topic", env.Topic, "err", err)
				continue
			}
			exit, ok := v.(*apievents.TaskExit)
			// An exec'd process's exit names the exec ID; only the
			// container's own process ends the container.
			if !ok || exit.ID != exit.ContainerID {
				continue
			}
			c, err := r.c.LoadContainer(ctx, exit.ContainerID)
			if err != nil {
				continue // removed meanwhile: nothing left to report
			}
			labels, err := c.Labels(ctx)
			if err != nil || labels[labelPodUID] == "" {
				continue // not a pod container of ours
			}
			exited(exit.ContainerID, labels[labelPodUID])
		}
	}
}

var _ krt.ExitWatcher = (*Runtime)(nil)
