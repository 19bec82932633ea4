//go:build linux

package containerd

import (
	"context"
	"fmt"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// processArgs applies Kubernetes' rule: command replaces the image's
// entrypoint, args replace its cmd; args alone run after the entrypoint.
func processArgs(cfg krt.ContainerConfig, entrypoint, cmd []string) ([]string, error) {
	var argv []string
	switch {
	case len(cfg.Command) > 0:
		argv = append(append(argv, cfg.Command...), cfg.Args...)
	case len(cfg.Args) > 0:
		argv = append(append(argv, entrypoint...), cfg.Args...)
	default:
		argv = append(append(argv, entrypoint...), cmd...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %q: %w: no command given and the image has no entrypoint or cmd", cfg.Name, krt.ErrInvalidConfig)
	}
	return argv, nil
}

// capName turns a Kubernetes capability ("NET_ADMIN") into the kernel's
// name ("CAP_NET_ADMIN").
func capName(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if strings.HasPrefix(c, "CAP_") {
		return c
	}
	return "CAP_" + c
}

func capNames(in []string) (all bool, out []string) {
	for _, c := range in {
		if strings.EqualFold(strings.TrimSpace(c), "ALL") {
			all = true
			continue
		}
		out = append(out, capName(c))
	}
	return all, out
}

// specOpts builds the OCI spec options for cfg on top of the image config.
func (r *Runtime) specOpts(ctx context.Context, img client.Image, cfg krt.ContainerConfig, cgroupPath string) ([]oci.SpecOpts, error) {
	ic, err := img.Spec(ctx)
	if err != nil {
		return nil, fmt.Errorf("image %s config: %w", img.Name(), err)
	}
	argv, err := processArgs(cfg, ic.Config.Entrypoint, ic.Config.Cmd)
	if err != nil {
		return nil, err
	}
	opts := []oci.SpecOpts{
		// The image's env and working directory first; the pod's
		// settings below override them.
		withImageEnvAndCwd(ic.Config),
		oci.WithProcessArgs(argv...),
		oci.WithEnv(cfg.Env),
		oci.WithCgroup(cgroupPath),
	}
	if cfg.TTY {
		// A terminal for the process, and TERM=xterm unless the pod's env
		// (applied after) says otherwise, as the CRI plugin does.
		opts = append(opts[:1], append([]oci.SpecOpts{oci.WithTTY}, opts[1:]...)...)
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if cfg.Hostname != "" {
		opts = append(opts, oci.WithHostname(cfg.Hostname))
	}
	if cfg.NetnsPath != "" {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.NetnsPath}))
	} else {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile, oci.WithHostResolvconf)
	}
	if len(cfg.Mounts) > 0 {
		ms := make([]specs.Mount, 0, len(cfg.Mounts))
		for _, m := range cfg.Mounts {
			if m.HostPath == "" || !strings.HasPrefix(m.ContainerPath, "/") {
				return nil, fmt.Errorf("container %q: %w: mount %q -> %q needs a host path and an absolute container path", cfg.Name, krt.ErrInvalidConfig, m.HostPath, m.ContainerPath)
			}
			options, err := bindOptions(m, r.rro)
			if err != nil {
				return nil, fmt.Errorf("container %q: %w", cfg.Name, err)
			}
			ms = append(ms, specs.Mount{Destination: m.ContainerPath, Type: "bind", Source: m.HostPath, Options: options})
		}
		opts = append(opts, oci.WithMounts(ms))
	}

	res := cfg.Resources
	if res.MemoryLimit < 0 || res.CPUQuota < 0 {
		return nil, fmt.Errorf("container %q: %w: negative resource limit", cfg.Name, krt.ErrInvalidConfig)
	}
	if res.MemoryLimit > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(res.MemoryLimit)))
	}
	if res.CPUShares > 0 {
		opts = append(opts, oci.WithCPUShares(res.CPUShares))
	}
	if res.CPUQuota > 0 {
		period := res.CPUPeriod
		if period == 0 {
			period = 100000
		}
		opts = append(opts, oci.WithCPUCFS(res.CPUQuota, period))
	}

	sec := cfg.Security
	if sec.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices,
			oci.WithWriteableSysfs, oci.WithWriteableCgroupfs)
	} else {
		dropAll, drop := capNames(sec.DropCapabilities)
		_, add := capNames(sec.AddCapabilities)
		if dropAll {
			opts = append(opts, oci.WithCapabilities(nil))
		} else if len(drop) > 0 {
			opts = append(opts, oci.WithDroppedCapabilities(drop))
		}
		if len(add) > 0 {
			opts = append(opts, oci.WithAddedCapabilities(add))
		}
	}
	if sec.ReadOnlyRootFilesystem {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	for _, id := range []*int64{sec.RunAsUser, sec.RunAsGroup} {
		if id != nil && (*id < 0 || *id > 1<<32-2) {
			return nil, fmt.Errorf("container %q: %w: user or group ID %d out of range", cfg.Name, krt.ErrInvalidConfig, *id)
		}
	}
	// The image's user, then the pod's runAsUser and runAsGroup.
	opts = append(opts, withUser(ic.Config.User, sec))
	// The VM may lack CAP_SYS_RESOURCE; a negative oom_score_adj then makes
	// runc fail, so never ask for one (see notes/node-runtime-and-network.md).
	opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process.OOMScoreAdj != nil && *s.Process.OOMScoreAdj < 0 {
			s.Process.OOMScoreAdj = nil
		}
		return nil
	})
	return opts, nil
}
