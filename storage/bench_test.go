package storage_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skiffkube/skiff/storage"
)

// BenchmarkCreate measures group-committed creates of 1 KiB values with 1, 16
// and 64 concurrent writers and reports writes/s (bench/ compares with kine).
func BenchmarkCreate(b *testing.B) {
	value := make([]byte, 1024)
	for _, be := range []backend{
		{"sqlite", func(t *testing.T) string { return b.TempDir() + "/state.db" }},
		{"postgres", nil},
	} {
		for _, writers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", be.name, writers), func(b *testing.B) {
				var ep string
				if be.endpoint != nil {
					ep = be.endpoint(nil)
				} else {
					ep = benchPostgres(b)
				}
				s := openStore(b, ep)
				ctx := context.Background()
				var n atomic.Int64
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := n.Add(1)
							if i > int64(b.N) {
								return
							}
							if _, err := s.Create(ctx, fmt.Sprintf("/bench/%d/%d", w, i), value, 0); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
			})
		}
	}
}

// BenchmarkWatchAcrossInstances measures write → event latency from one
// store to a watcher on another store of the same PostgreSQL database (woken
// by LISTEN/NOTIFY), and reports p50/p99 in milliseconds.
func BenchmarkWatchAcrossInstances(b *testing.B) {
	ep := benchPostgres(b)
	a, w := openStore(b, ep), openStore(b, ep)
	ctx := context.Background()
	watch, err := w.Watch(ctx, storage.WatchOptions{Prefix: "/lat/"})
	if err != nil {
		b.Fatal(err)
	}
	defer watch.Stop()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := a.Create(ctx, fmt.Sprintf("/lat/%d", i), []byte("v"), 0); err != nil {
			b.Fatal(err)
		}
		<-watch.Events()
		lat = append(lat, time.Since(start))
		time.Sleep(20 * time.Millisecond)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkList10k lists 10,000 keys of 1 KiB under one prefix.
func BenchmarkList10k(b *testing.B) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		b.Run(dialect, func(b *testing.B) {
			ep := b.TempDir() + "/state.db"
			if dialect == "postgres" {
				ep = benchPostgres(b)
			}
			s := openStore(b, ep)
			ctx := context.Background()
			value := make([]byte, 1024)
			var wg sync.WaitGroup
			for w := 0; w < 16; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < 10000; i += 16 {
						if _, err := s.Create(ctx, fmt.Sprintf("/list/item-%05d", i), value, 0); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l, err := s.List(ctx, storage.ListOptions{Prefix: "/list/"})
				if err != nil || len(l.KVs) != 10000 {
					b.Fatal(len(l.KVs), err)
				}
			}
		})
	}
}

// BenchmarkPodWrites runs the store's share of a pod's life at 1,000 hollow
// nodes (test/e2e's scheduling benchmark): a ~3 KB create, two updates
// (binding, status) and four ~1 KB Events with a TTL, from 16 writers on a
// SQLite file. It reports this process's CPU time per pod (the store and its
// SQLite engine run in it) and the database file's size per 1,000 pods, WAL
// checkpointed.
func BenchmarkPodWrites(b *testing.B) {
	path := b.TempDir() + "/state.db"
	s := openStore(b, path)
	ctx := context.Background()
	pod, event := make([]byte, 3000), make([]byte, 900)
	for i := range pod {
		pod[i] = byte('a' + i%26)
	}
	const writers = 16
	per := (b.N + writers - 1) / writers
	b.ResetTimer()
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				key := fmt.Sprintf("/registry/pods/default/p-%d-%d", w, i)
				kv, err := s.Create(ctx, key, pod, 0)
				for u := 0; err == nil && u < 2; u++ {
					kv, err = s.Update(ctx, key, pod, kv.ModRevision, 0)
				}
				for e := 0; err == nil && e < 4; e++ {
					_, err = s.Create(ctx, fmt.Sprintf("/registry/events/default/p-%d-%d.%d", w, i, e), event, time.Hour)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	pods := float64(per * writers)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/pods, "cpu-us/pod")
	b.StopTimer()
	if err := s.Close(); err != nil { // checkpoints the WAL into the file
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20)/pods*1000, "db-MB/1000pods")
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
