package memstore

import "slices"

// topK keeps the k best values pushed into it, in a heap whose root is the
// worst of them, so that a search over n candidates costs O(n log k) and
// holds only k of them.
type topK[T any] struct {
	k     int
	worse func(a, b T) bool // a ranks below b
	heap  []T
}

func newTopK[T any](k int, worse func(a, b T) bool) *topK[T] {
	return &topK[T]{k: k, worse: worse}
}

// push offers v, keeping it if it is among the k best seen so far.
func (t *topK[T]) push(v T) {
	if len(t.heap) < t.k {
		t.heap = append(t.heap, v)
		t.up(len(t.heap) - 1)
		return
	}
	if t.k == 0 || !t.worse(t.heap[0], v) {
		return
	}
	t.heap[0] = v
	t.down(0)
}

// sorted returns the kept values, best first.
func (t *topK[T]) sorted() []T {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b T) int {
		switch {
		case t.worse(b, a):
			return -1
		case t.worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

func (t *topK[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !t.worse(t.heap[i], t.heap[parent]) {
			return
		}
		t.heap[i], t.heap[parent] = t.heap[parent], t.heap[i]
		i = parent
	}
}

func (t *topK[T]) down(i int) {
	n := len(t.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && t.worse(t.heap[l], t.heap[least]) {
			least = l
		}
		if r := 2*i + 2; r < n && t.worse(t.heap[r], t.heap[least]) {
			least = r
		}
		if least == i {
			return
		}
		t.heap[i], t.heap[least] = t.heap[least], t.heap[i]
		i = least
	}
}
