package slowstart

import (
	"errors"
	"sync"
	"testing"
)

func TestRun(t *testing.T) {
	boom := errors.New("quota")
	for _, tc := range []struct {
		name            string
		count           int
		failFrom        int // calls with i >= failFrom fail; -1: none
		made, succeeded int
		wantErr         bool
	}{
		{name: "nothing", count: 0, failFrom: -1},
		{name: "all succeed", count: 10, failFrom: -1, made: 10, succeeded: 10},
		{name: "first call fails", count: 10, failFrom: 0, made: 1, wantErr: true},
		// Batches 1, 2, 4: the third batch (calls 3-6) holds the first failure.
		{name: "failure in the third batch", count: 10, failFrom: 5, made: 7, succeeded: 5, wantErr: true},
		{name: "last batch trimmed", count: 5, failFrom: -1, made: 5, succeeded: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]bool{}
			made, ok, err := Run(tc.count, func(i int) error {
				mu.Lock()
				defer mu.Unlock()
				if seen[i] {
					t.Errorf("call %d made twice", i)
				}
				seen[i] = true
				if tc.failFrom >= 0 && i >= tc.failFrom {
					return boom
				}
				return nil
			})
			if made != tc.made || ok != tc.succeeded || (err != nil) != tc.wantErr || len(seen) != tc.made {
				t.Errorf("Run(%d) = %d made, %d succeeded, %v (calls %d); want %d, %d, error %v",
					tc.count, made, ok, err, len(seen), tc.made, tc.succeeded, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the call's", err)
			}
		})
	}
}
