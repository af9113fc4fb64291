package sqlitestore

import (
	"database/sql/driver"
	"runtime"
	"slices"
	"sync"

	"modernc.org/sqlite"
)

// The full-text indexes hold index terms computed in Go, not raw text: for
// each item or chunk, its distinct tokens (as the unicode61 tokenizer
// splits and folds them) stemmed by the Porter stemmer, joined by spaces.
// The FTS5 tables themselves only split that on spaces. Doing the
// linguistic work in Go means it runs on every core, outside the write
// lock, and that Go code locating matches afterwards agrees with the index
// by construction. The tables keep no positions (detail=none): search needs
// to know which rows hold a term, and computes frequencies and BM25 itself.

// indexTerms appends to dst the distinct index terms of text, separated by
// spaces; dd, reset first, drops the repeats.
func indexTerms(dst []byte, text string, dd *dedup) []byte {
	dd.reset()
	tokenize(text, func(t *token) bool {
		mark := len(dst)
		start := mark
		if len(dd.spans) > 0 {
			dst = append(dst, ' ')
			start++
		}
		dst = append(dst, t.folded...)
		// The stem is a prefix of the token, possibly with one byte more,
		// so it is written in place at the end of dst.
		stem := porterStem(dst[start:])
		dst = append(dst[:start], stem...)
		if dd.add(dst, start, len(dst)) {
			dst = dst[:mark]
		}
		return true
	})
	return dst
}

// dedup is a set of byte strings held in one buffer, reused from one text
// to the next without allocating.
type dedup struct {
	slots []int32 // 1 + index into spans; 0 is empty
	spans []span
}

type span struct {
	start, end int32
	hash       uint32
}

func (d *dedup) reset() {
	clear(d.slots)
	d.spans = d.spans[:0]
}

// add records buf[start:end] and reports whether it was already there.
func (d *dedup) add(buf []byte, start, end int) bool {
	if 2*(len(d.spans)+1) > len(d.slots) {
		d.grow()
	}
	key := buf[start:end]
	h := fnv32(key)
	mask := uint32(len(d.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		slot := d.slots[i]
		if slot == 0 {
			d.spans = append(d.spans, span{int32(start), int32(end), h})
			d.slots[i] = int32(len(d.spans))
			return false
		}
		if sp := d.spans[slot-1]; sp.hash == h && string(buf[sp.start:sp.end]) == string(key) {
			return true
		}
	}
}

func (d *dedup) grow() {
	d.slots = make([]int32, max(64, 2*len(d.slots)))
	mask := uint32(len(d.slots) - 1)
	for n, sp := range d.spans {
		i := sp.hash & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = int32(n + 1)
	}
}

func fnv32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// itemIndexTerms returns the index terms of an item's scalar values.
func itemIndexTerms(item []byte) string {
	scalars, err := appendScalars(make([]byte, 0, len(item)), item, true)
	if err != nil {
		return ""
	}
	return string(indexTerms(make([]byte, 0, len(scalars)), string(scalars), &dedup{}))
}

// parallel calls fn(i) for i in [0, n) on every core, each worker with its
// own state from newState.
func parallel[S any](n int, newState func() S, fn func(i int, state S)) {
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

// stager hands index terms computed in Go to the SQL function
// ctxkit_staged(i), so that one INSERT … SELECT statement can feed a whole
// list to the index. FTS5 flushes its in-memory index at every statement
// of a transaction that writes to it, so a statement per row would write
// thousands of tiny segments. Only the writer connection calls it, inside
// a write transaction, which holds the texts for that statement's duration.
type stager struct {
	mu    sync.Mutex
	texts []string
}

func (st *stager) set(texts []string) {
	st.mu.Lock()
	st.texts = texts
	st.mu.Unlock()
}

func (st *stager) fn(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	i, ok := args[0].(int64)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !ok || i < 0 || i >= int64(len(st.texts)) {
		return "", nil
	}
	return st.texts[i], nil
}

// queryTerms returns the distinct index terms of a query word: what its
// prefix query looks for.
func queryTerms(term string) []string {
	var out []string
	tokenize(term, func(t *token) bool {
		st := string(porterStem(slices.Clone(t.folded)))
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
		return true
	})
	return out
}
