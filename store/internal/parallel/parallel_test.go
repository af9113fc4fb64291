package parallel

import (
	"sync/atomic"
	"testing"
)

func TestForCallsEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 10000} {
		calls := make([]atomic.Int32, n)
		var states atomic.Int32
		For(n, func() *int { states.Add(1); return new(int) }, func(i int, st *int) {
			*st++
			calls[i].Add(1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: fn(%d) called %d times", n, i, c)
			}
		}
		if states.Load() < 1 {
			t.Fatalf("n=%d: no worker state", n)
		}
	}
}
