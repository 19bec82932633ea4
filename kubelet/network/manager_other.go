//go:build !linux

package network

import (
	"context"
	"errors"
	"net"
)

var errNotLinux = errors.New("network: pod networking needs Linux (network namespaces, veth, bridges)")

// Manager sets up pod networks; on this OS every call fails with a clear error.
type Manager struct{ s settings }

// New validates cfg; the manager it returns cannot change anything here.
func New(cfg Config) (*Manager, error) {
	s, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Manager{s: s}, nil
}

func (m *Manager) Gateway() net.IP                             { return m.s.gateway }
func (m *Manager) Bridge() string                              { return m.s.bridge }
func (m *Manager) EnsureBridge(context.Context) error          { return errNotLinux }
func (m *Manager) RemoveBridge(context.Context) error          { return errNotLinux }
func (m *Manager) SetUp(context.Context, string) (*Pod, error) { return nil, errNotLinux }
func (m *Manager) SetUpWithIP(context.Context, string, net.IP) (*Pod, error) {
	return nil, errNotLinux
}
func (m *Manager) TearDown(context.Context, string) error { return errNotLinux }
func (m *Manager) Get(string) (*Pod, error)               { return nil, errNotLinux }
func (m *Manager) Pods() ([]string, error)                { return nil, errNotLinux }
