// Package slowstart issues a controller's creations the way Kubernetes' slowStartBatch does: in
// batches of 1, 2, 4, …, each batch in parallel, stopping after the first batch with a failure. A
// quota or admission refusal that would fail every call then costs one failed call (and one
// FailedCreate event), not hundreds; the calls not made wait for a later sync.
package slowstart

import (
	"errors"
	"sync"
)

// Run calls fn(i) for i = 0, 1, … count-1 in growing batches and stops after a batch in which a
// call failed. It returns how many calls were made, how many of them succeeded, and the failing
// batch's errors joined. Calls made = count unless a batch failed; the caller lowers its
// expectations by the calls not made (and by the failed ones, unless fn does that itself).
func Run(count int, fn func(i int) error) (made, succeeded int, err error) {
	for batch := 1; made < count; batch *= 2 {
		batch = min(batch, count-made)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for j := range batch {
			i := made + j
			wg.Go(func() { errs[j] = fn(i) })
		}
		wg.Wait()
		made += batch
		for _, e := range errs {
			if e == nil {
				succeeded++
			}
		}
		if err := errors.Join(errs...); err != nil {
			return made, succeeded, err
		}
	}
	return made, succeeded, nil
}
