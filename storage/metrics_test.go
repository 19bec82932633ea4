package storage_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skiffkube/skiff/storage"
)

// gather registers s in a registry of its own and returns its metric
// families by name.
func gather(t *testing.T, s *storage.Store) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(s); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// commitsWith is skiff_storage_commits_total's value for result.
func commitsWith(t *testing.T, mfs map[string]*dto.MetricFamily, result string) float64 {
	t.Helper()
	for _, m := range mfs["skiff_storage_commits_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "result" && l.GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("skiff_storage_commits_total has no result=%q series", result)
	return 0
}

// The store's metrics account for every write it commits: the operations
// per commit add up to the writes made, a batch that wrote nothing (its one
// create failed its precondition) counts as rejected, each commit is timed,
// the revision gauge is the store's revision, and the watch gauge follows
// watches opening and closing, with and without a trigger.
func TestMetricsAccountForCommitsAndWatches(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		// A small buffer: the watch that is never read falls behind.
		s := openStore(t, b.endpoint(t), func(cfg *storage.Config) { cfg.WatchBuffer = 4 })
		ctx := ctxT(t)
		before := gather(t, s)
		for _, r := range []string{"committed", "retried", "failed", "unknown", "rejected"} {
			if got := commitsWith(t, before, r); got != 0 {
				t.Errorf("a new store counts %v %s commits", got, r)
			}
		}

		// This watch never reads: it is taken off the live stream once
		// its buffer overflows, but it is still open.
		behind, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/things/"})
		if err != nil {
			t.Fatal(err)
		}
		const writers = 12
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Create(ctx, fmt.Sprintf("/registry/things/ns/t-%d", i), []byte("v"), 0); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		// A create of a key that exists, alone in its batch, writes nothing:
		// a rejected batch, not a commit.
		if _, err := s.Create(ctx, "/registry/things/ns/t-0", []byte("v"), 0); err == nil {
			t.Fatal("a second create of one key succeeded")
		}

		plain, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/things/"})
		if err != nil {
			t.Fatal(err)
		}
		indexed, err := s.Watch(ctx, storage.WatchOptions{Prefix: "/registry/pods/", Trigger: triggered("a")})
		if err != nil {
			t.Fatal(err)
		}

		after := gather(t, s)
		ops := after["skiff_storage_commit_operations"].GetMetric()[0].GetHistogram()
		if ops.GetSampleSum() != writers {
			t.Errorf("commits carried %v operations, want %d", ops.GetSampleSum(), writers)
		}
		committed := commitsWith(t, after, "committed")
		if committed < 1 || committed > writers || float64(ops.GetSampleCount()) != committed {
			t.Errorf("%v commits counted and %d in the operations histogram, for %d writes", committed, ops.GetSampleCount(), writers)
		}
		if rejected := commitsWith(t, after, "rejected"); rejected != 1 {
			t.Errorf("%v rejected batches counted, want the one of the duplicate create", rejected)
		}
		if d := after["skiff_storage_commit_duration_seconds"].GetMetric()[0].GetHistogram(); float64(d.GetSampleCount()) != committed || d.GetSampleSum() <= 0 {
			t.Errorf("commit durations: %d samples summing to %vs, for %v commits", d.GetSampleCount(), d.GetSampleSum(), committed)
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := after["skiff_storage_revision"].GetMetric()[0].GetGauge().GetValue(); got != float64(rev) {
			t.Errorf("skiff_storage_revision = %v, the store is at %d", got, rev)
		}
		if got := after["skiff_storage_watches"].GetMetric()[0].GetGauge().GetValue(); got != 3 {
			t.Errorf("skiff_storage_watches = %v with three watches open, one of them behind", got)
		}
		dialect := after["skiff_storage_revision"].GetMetric()[0].GetLabel()[0]
		if dialect.GetName() != "dialect" || !strings.Contains(b.name, dialect.GetValue()) {
			t.Errorf("metrics labelled %s=%s on the %s store", dialect.GetName(), dialect.GetValue(), b.name)
		}

		plain.Stop()
		indexed.Stop()
		plain.Stop() // a second Stop must not count the watch out twice
		if got := gather(t, s)["skiff_storage_watches"].GetMetric()[0].GetGauge().GetValue(); got != 1 {
			t.Errorf("skiff_storage_watches = %v after two of three watches stopped", got)
		}
		behind.Stop()
		if got := gather(t, s)["skiff_storage_watches"].GetMetric()[0].GetGauge().GetValue(); got != 0 {
			t.Errorf("skiff_storage_watches = %v after every watch stopped", got)
		}
	})
}
