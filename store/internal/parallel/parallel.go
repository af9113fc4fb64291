// Package parallel spreads independent work over every core: the one
// worker loop the stores use to compute index terms and to measure search
// candidates.
package parallel

import (
	"runtime"
	"sync"
)

// For calls fn(i, state) for i in [0, n) on every core (one worker per 256
// calls at the least), each worker with its own state from newState.
func For[S any](n int, newState func() S, fn func(i int, state S)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			st := newState()
			for i := w; i < n; i += workers {
				fn(i, st)
			}
		})
	}
	wg.Wait()
}
