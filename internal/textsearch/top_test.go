package textsearch

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTop keeps the same documents, in the same order, as sorting all of
// them by descending score, then ascending Doc, and taking the first n.
func TestTop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		all := make([]Scored, r.IntN(50))
		for i, p := range r.Perm(len(all)) {
			all[i] = Scored{Doc: int64(p), Score: float64(r.IntN(5))}
		}
		n := r.IntN(12)
		top := NewTop(n)
		for _, s := range all {
			top.Offer(s.Doc, s.Score)
		}
		got := top.Sorted()
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b Scored) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return cmp.Compare(a.Doc, b.Doc)
		})
		want = want[:min(n, len(want))]
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("n=%d: got %v, want %v", n, got, want)
		}
	}
}
