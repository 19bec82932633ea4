//go:build linux

package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/vishvananda/netns"

	"github.com/skiffkube/skiff/kubelet/nodeapi"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// netnsPather is the part of network.Manager that says where a pod's
// network namespace is mounted.
type netnsPather interface {
	NetnsPath(podID string) string
}

// PortForward connects stream to the pod's port on its own localhost, as
// the kubelet does: the socket is made inside the pod's network namespace,
// so ports the pod binds to 127.0.0.1 are reachable too.
func (r *Runtime) PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if port <= 0 || port > 65535 {
		return fmt.Errorf("invalid port %d", port)
	}
	list, err := r.c.ListContainers(ctx, krt.ListFilter{})
	if err != nil {
		return err
	}
	uid := ""
	for _, s := range list {
		if s.PodNamespace == namespace && s.PodName == pod && s.State == krt.StateRunning {
			uid = s.PodUID
			break
		}
	}
	if uid == "" {
		return fmt.Errorf("%w: no running container in pod %s/%s", nodeapi.ErrContainerNotFound, namespace, pod)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	p, ok := r.net.(netnsPather)
	if !ok {
		return errors.New("port-forward: this runtime's network cannot name pod namespaces")
	}
	var conn net.Conn
	if path := p.NetnsPath(uid); fileExists(path) {
		conn, err = dialInNetns(ctx, path, addr)
	} else {
		// A host-network pod has no namespace of its own.
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp4", addr)
	}
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s port %d: %w", namespace, pod, port, err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, err = io.Copy(stream, conn)
	stream.Close()
	wg.Wait()
	return err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// dialInNetns opens a TCP connection from inside the namespace at path.
// The socket keeps its namespace after the thread switches back.
func dialInNetns(ctx context.Context, path, addr string) (net.Conn, error) {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// A thread of its own, locked and thrown away if it cannot be put
		// back in the host's namespace.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			done <- result{err: err}
			return
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp4", addr)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	res := <-done
	return res.conn, res.err
}
