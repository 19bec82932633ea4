package storage_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/skiffkube/skiff/storage"
)

// Many goroutines doing read-modify-write with CAS on a few shared counters
// end with exactly the number of successful increments: no lost update.
func TestConcurrentCASLosesNoUpdate(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		stores := []*storage.Store{openStore(t, ep)}
		if b.name == "postgres" {
			stores = append(stores, openStore(t, ep)) // and across two processes' worth of stores
		}
		ctx := ctxT(t)
		keys := []string{"/counters/a", "/counters/b", "/counters/c"}
		for _, k := range keys {
			if _, err := stores[0].Create(ctx, k, []byte("0"), 0); err != nil {
				t.Fatal(err)
			}
		}
		const workers, perWorker = 24, 25
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[w%len(stores)]
				key := keys[w%len(keys)]
				for i := 0; i < perWorker; i++ {
					kv, err := s.Get(ctx, key, 0)
					for {
						if err != nil {
							errs <- err
							return
						}
						n, _ := strconv.Atoi(string(kv.Value))
						var next *storage.KeyValue
						next, err = s.Update(ctx, key, []byte(strconv.Itoa(n+1)), kv.ModRevision, 0)
						if err == nil {
							break
						}
						if errors.Is(err, storage.ErrConflict) {
							kv, err = next, nil // the conflict carries the current state
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		total := 0
		for _, k := range keys {
			kv, err := stores[0].Get(ctx, k, 0)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(string(kv.Value))
			total += n
		}
		if total != workers*perWorker {
			t.Fatalf("counters sum to %d, want %d: updates were lost", total, workers*perWorker)
		}
	})
}

// A concurrent history of gets and puts across two store instances on one
// PostgreSQL database is linearizable (checked by porcupine).
func TestLinearizableAcrossInstances(t *testing.T) {
	ep := postgresSchema(t)
	a, b := openStore(t, ep), openStore(t, ep)
	ctx := ctxT(t)
	keys := []string{"/lin/x", "/lin/y"}
	for _, k := range keys {
		if _, err := a.Create(ctx, k, []byte("init"), 0); err != nil {
			t.Fatal(err)
		}
	}
	type input struct {
		key   string
		put   bool
		value string
	}
	var mu sync.Mutex
	var ops []porcupine.Operation
	var wg sync.WaitGroup
	for c := 0; c < 6; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*storage.Store{a, b}[c%2]
			for i := 0; i < 60; i++ {
				in := input{key: keys[i%len(keys)], put: (i+c)%3 == 0, value: fmt.Sprintf("c%d-%d", c, i)}
				call := time.Now().UnixNano()
				var out string
				if in.put {
					if _, err := s.Update(ctx, in.key, []byte(in.value), 0, 0); err != nil {
						t.Error(err)
						return
					}
				} else {
					kv, err := s.Get(ctx, in.key, 0)
					if err != nil {
						t.Error(err)
						return
					}
					out = string(kv.Value)
				}
				ret := time.Now().UnixNano()
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	model := porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			for _, op := range history {
				k := op.Input.(input).key
				by[k] = append(by[k], op)
			}
			var out [][]porcupine.Operation
			for _, p := range by {
				out = append(out, p)
			}
			return out
		},
		Init: func() any { return "init" },
		Step: func(state, in, out any) (bool, any) {
			i := in.(input)
			if i.put {
				return true, i.value
			}
			return out.(string) == state.(string), state
		},
		Equal: func(a, b any) bool { return a == b },
	}
	if res := porcupine.CheckOperationsTimeout(model, ops, 30*time.Second); res != porcupine.Ok {
		t.Fatalf("history of %d operations is not linearizable (result %v)", len(ops), res)
	}
}

// crashChildEnv makes the test binary act as the writer of the crash test.
const crashChildEnv = "SKIFF_STORAGE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if ep := os.Getenv(crashChildEnv); ep != "" {
		crashChild(ep)
		return
	}
	os.Exit(m.Run())
}

// crashChild writes keys from 8 goroutines and prints each acknowledged one,
// until it is killed.
func crashChild(endpoint string) {
	s, err := storage.New(context.Background(), storage.Config{Endpoint: endpoint, EncryptionKey: testKey})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%d/%d", g, i)
				if _, err := s.Create(context.Background(), key, []byte(strings.Repeat("v", 512)), 0); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintln(out, key)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	each(t, func(t *testing.T, b backend) {
		ep := b.endpoint(t)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+ep)
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []string
		sc := bufio.NewScanner(stdout)
		deadline := time.Now().Add(20 * time.Second)
		for len(acked) < 3000 && time.Now().Before(deadline) && sc.Scan() {
			acked = append(acked, sc.Text())
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // whatever it printed before dying was acknowledged too
			acked = append(acked, sc.Text())
		}
		cmd.Wait()
		if len(acked) < 100 {
			t.Fatalf("child acknowledged only %d writes", len(acked))
		}
		s := openStore(t, ep)
		ctx := ctxT(t)
		for _, k := range acked {
			if _, err := s.Get(ctx, k, 0); err != nil {
				t.Fatalf("acknowledged key %s lost after SIGKILL: %v", k, err)
			}
		}
		// The reopened store is fully usable.
		if _, err := s.Create(ctx, "/crash/after", []byte("ok"), 0); err != nil {
			t.Fatal(err)
		}
		rev, _ := s.Revision(ctx)
		var rows int64
		s.DB().QueryRowContext(ctx, `SELECT count(*) FROM history`).Scan(&rows)
		if rows != rev {
			t.Fatalf("history has %d rows but the revision is %d: revisions are not dense", rows, rev)
		}
		t.Logf("%d acknowledged writes survived SIGKILL", len(acked))
	})
}
