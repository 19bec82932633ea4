package manager

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/authz/bootstrap"
)

// runControllers starts a real API server and a manager running the named
// controllers set up as skiff server sets them up: the manager acts as
// system:kube-controller-manager and each controller as its own service
// account. more, when given, adds options that need the server. The
// manager stops, and its error is checked, when the test ends.
func runControllers(t *testing.T, controllers []string, more func(*apiservertest.Running, *Options)) running {
	t.Helper()
	srv := apiservertest.Start(t)
	admin, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	root, err := kubernetes.NewForConfig(srv.UserConfig(t, bootstrap.ControllerManagerUser))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
		ControllerCredentials: ServiceAccountCredentials(root, srv.Config),
	}
	if more != nil {
		more(srv, &opts)
	}
	m, err := New(root, Config{Controllers: controllers, Workers: 1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return running{srv: srv, admin: admin, root: root, m: m, ctx: ctx}
}

// running is what runControllers started: the server, a client as its
// admin, one as the manager's own identity, the manager, and a context that
// lasts while the manager runs.
type running struct {
	srv         *apiservertest.Running
	admin, root kubernetes.Interface
	m           *Manager
	ctx         context.Context
}
