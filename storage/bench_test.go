package storage_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
