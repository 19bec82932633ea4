package target

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Etcd is any etcd v3 API server (here: kine), driven with the official
// client over loopback gRPC.
type Etcd struct {
	client *clientv3.Client
}

// DialEtcd connects to endpoint and waits until the server answers a read.
func DialEtcd(ctx context.Context, endpoint string) (*Etcd, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		// Lists of 100,000 keys with 1 KiB values exceed gRPC's 4 MiB
		// default; the apiserver raises this limit the same way.
		MaxCallRecvMsgSize: 1 << 30,
	})
	if err != nil {
		return nil, fmt.Errorf("target: etcd client for %s: %w", endpoint, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = c.Get(rctx, "/registry/health")
		cancel()
		if err == nil {
			return &Etcd{client: c}, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			c.Close()
			return nil, fmt.Errorf("target: etcd server %s not answering: %w", endpoint, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Create implements Target.
func (e *Etcd) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, ErrKeyExists
	}
	return resp.Header.Revision, nil
}

// Update implements Target.
func (e *Etcd) Update(ctx context.Context, key string, value []byte, rev int64) (int64, error) {
	resp, err := e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, ErrConflict
	}
	return resp.Header.Revision, nil
}

// List implements Target.
func (e *Etcd) List(ctx context.Context, prefix string) (int, error) {
	resp, err := e.client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	return len(resp.Kvs), nil
}

// ListKeys implements Target.
func (e *Etcd) ListKeys(ctx context.Context, prefix string) ([]string, error) {
	resp, err := e.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = string(kv.Key)
	}
	return keys, nil
}

// Watch implements Target.
func (e *Etcd) Watch(ctx context.Context, prefix string, onEvent func(key string)) (func() error, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	ch := e.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	select {
	case resp, ok := <-ch:
		if !ok {
			cancel()
			return nil, fmt.Errorf("target: watch on %q closed before it was created", prefix)
		}
		if err := resp.Err(); err != nil {
			cancel()
			return nil, fmt.Errorf("target: watch on %q: %w", prefix, err)
		}
	case <-time.After(10 * time.Second):
		cancel()
		return nil, fmt.Errorf("target: watch on %q not created within 10s", prefix)
	}
	done := make(chan error, 1)
	go func() {
		defer cancel()
		for resp := range ch {
			if err := resp.Err(); err != nil {
				done <- err
				return
			}
			for _, ev := range resp.Events {
				onEvent(string(ev.Kv.Key))
			}
		}
		if ctx.Err() != nil {
			done <- nil
			return
		}
		done <- fmt.Errorf("target: watch on %q ended unexpectedly", prefix)
	}()
	return func() error { return <-done }, nil
}

// Close implements Target.
func (e *Etcd) Close() error { return e.client.Close() }
