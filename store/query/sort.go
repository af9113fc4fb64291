package query

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"slices"
	"strings"
)

// sortVal is one item's value for one sort key, ranked the way Sort
// documents.
type sortVal struct {
	rank int8 // 0 null or missing, 1 number or boolean, 2 string, 3 other
	num  float64
	str  string // the string, or the JSON text of an array or object
	raw  any    // a number that is not a float64, for exact ties
}

func makeSortVal(v any) sortVal {
	switch t := v.(type) {
	case nil:
		return sortVal{}
	case float64:
		return sortVal{rank: 1, num: t}
	case string:
		return sortVal{rank: 2, str: t}
	case bool:
		f, _ := number(t, true)
		return sortVal{rank: 1, num: f}
	case []any, map[string]any:
		b, _ := json.Marshal(t)
		return sortVal{rank: 3, str: string(b)}
	}
	if f, ok := number(v, false); ok {
		return sortVal{rank: 1, num: f, raw: v}
	}
	b, _ := json.Marshal(v)
	return sortVal{rank: 3, str: string(b)}
}

func compareSortVals(a, b *sortVal) int {
	if a.rank != b.rank {
		return cmp.Compare(a.rank, b.rank)
	}
	switch a.rank {
	case 1:
		if a.num != b.num || (a.raw == nil && b.raw == nil) {
			return cmp.Compare(a.num, b.num)
		}
		ra, rb := a.raw, b.raw
		if ra == nil {
			ra = a.num
		}
		if rb == nil {
			rb = b.num
		}
		return cmpNumbers(ra, rb, a.num, b.num)
	case 2, 3:
		return strings.Compare(a.str, b.str)
	}
	return 0
}

// sortKeys holds the sort values of items, len(keys) per item, so that a
// comparison reads no item.
type sortKeys struct {
	keys []SortKey
	vals []sortVal
}

// fill computes the sort values of item into dst.
func (s *sortKeys) fill(dst []sortVal, item any) {
	for k, key := range s.keys {
		dst[k] = makeSortVal(get(item, key.Path))
	}
}

// compare orders two items by their sort values, then by their position in
// the input, which makes the order stable.
func (s *sortKeys) compare(a, b []sortVal, ia, ib int) int {
	for k := range s.keys {
		c := compareSortVals(&a[k], &b[k])
		if c != 0 {
			if s.keys[k].Desc {
				return -c
			}
			return c
		}
	}
	return cmp.Compare(ia, ib)
}

func sortStage(i int, keys []SortKey) stage {
	return func(in seq) seq {
		return func(yield func(any, error) bool) {
			var all []any
			for v, err := range in {
				if err != nil {
					yield(nil, err)
					return
				}
				if len(all) == MaxHeldItems {
					yield(nil, holdError(i, "sort", "sort"))
					return
				}
				all = append(all, v)
			}
			nk := len(keys)
			sk := &sortKeys{keys: keys, vals: make([]sortVal, len(all)*nk)}
			for r, v := range all {
				sk.fill(sk.vals[r*nk:(r+1)*nk], v)
			}
			// Sort positions rather than items: swaps stay cheap.
			order := make([]int32, len(all))
			for r := range order {
				order[r] = int32(r)
			}
			slices.SortFunc(order, func(a, b int32) int {
				return sk.compare(sk.vals[int(a)*nk:int(a+1)*nk], sk.vals[int(b)*nk:int(b+1)*nk], int(a), int(b))
			})
			for _, r := range order {
				if !yield(all[r], nil) {
					return
				}
			}
		}
	}
}

// ranked is an item kept by topStage.
type ranked struct {
	item any
	idx  int
	vals []sortVal
}

// worstFirst is a heap of kept items whose root is the one that sorts last.
type worstFirst struct {
	sk   *sortKeys
	rows []*ranked
}

func (h *worstFirst) Len() int { return len(h.rows) }
func (h *worstFirst) Less(a, b int) bool {
	ra, rb := h.rows[a], h.rows[b]
	return h.sk.compare(ra.vals, rb.vals, ra.idx, rb.idx) > 0
}
func (h *worstFirst) Swap(a, b int) { h.rows[a], h.rows[b] = h.rows[b], h.rows[a] }
func (h *worstFirst) Push(x any)    { h.rows = append(h.rows, x.(*ranked)) }
func (h *worstFirst) Pop() any {
	last := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return last
}

// topStage is a sort followed by a limit or slice: it keeps only the
// skip+take items that sort first, in a heap, so it holds few items and
// takes O(n log k) time.
func topStage(i int, keys []SortKey, skip, take int) stage {
	return func(in seq) seq {
		return func(yield func(any, error) bool) {
			k := skip + take
			if take == 0 {
				return
			}
			sk := &sortKeys{keys: keys}
			h := &worstFirst{sk: sk}
			scratch := make([]sortVal, len(keys))
			n := 0
			for v, err := range in {
				if err != nil {
					yield(nil, err)
					return
				}
				sk.fill(scratch, v)
				switch {
				case len(h.rows) < k:
					if len(h.rows) == MaxHeldItems {
						yield(nil, holdError(i, "sort", "sort"))
						return
					}
					heap.Push(h, &ranked{item: v, idx: n, vals: slices.Clone(scratch)})
				case sk.compare(scratch, h.rows[0].vals, n, h.rows[0].idx) < 0:
					worst := h.rows[0]
					worst.item, worst.idx = v, n
					copy(worst.vals, scratch)
					heap.Fix(h, 0)
				}
				n++
			}
			rows := h.rows
			slices.SortFunc(rows, func(a, b *ranked) int { return sk.compare(a.vals, b.vals, a.idx, b.idx) })
			for r := skip; r < len(rows); r++ {
				if !yield(rows[r].item, nil) {
					return
				}
			}
		}
	}
}
