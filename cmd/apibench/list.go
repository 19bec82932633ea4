package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// listResult is the latency of one way of listing the namespace.
type listResult struct {
	name      string
	latencies []time.Duration
	bytes     int64
}

// fill creates n pods in ns with 64 concurrent clients.
func fill(ctx context.Context, cs *kubernetes.Clientset, ns string, n int) (time.Duration, error) {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for c := 0; c < 64; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, benchPod(fmt.Sprintf("pod-%06d", i)), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), ctx.Err()
}

// Accept headers of the three ways clients list: kubectl -o json, kubectl
// get (a Table with PartialObjectMetadata rows), client-go's default.
const (
	acceptJSON     = "application/json"
	acceptTable    = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
)

// measureLists lists ns runs times in each encoding, reading each reply
// whole, and checks the reply's Content-Type.
func measureLists(ctx context.Context, o options, cfg *rest.Config, ns string) ([]listResult, error) {
	tc, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: tc}
	url := cfg.Host + "/api/v1/namespaces/" + ns + "/pods"
	var out []listResult
	for _, enc := range []struct{ name, accept, want string }{
		{"JSON", acceptJSON, "application/json"},
		{"Table", acceptTable, "application/json"},
		{"protobuf", acceptProtobuf, "application/vnd.kubernetes.protobuf"},
	} {
		r := listResult{name: enc.name}
		for i := 0; i < o.listRuns; i++ {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return nil, err
			}
			req.Header.Set("Accept", enc.accept)
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				return nil, fmt.Errorf("list as %s: %w", enc.name, err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("list as %s: %w", enc.name, err)
			}
			lat := time.Since(t0)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != enc.want {
				return nil, fmt.Errorf("list as %s: %s, Content-Type %q", enc.name, resp.Status, resp.Header.Get("Content-Type"))
			}
			r.latencies = append(r.latencies, lat)
			r.bytes = n
		}
		o.logf("list %d pods as %s: %d runs, %d bytes each", o.listSize, enc.name, o.listRuns, r.bytes)
		out = append(out, r)
	}
	return out, nil
}
