package memstore_test

import (
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/sametest"
	"github.com/ctxkit/ctxkit/store/memstore"
)

// TestSameAsSQLite checks that the memory store finds and ranks exactly
// as the SQLite store: the same hits, in the same order, with the same
// scores, and the same totals, also after mutations (sametest); and the
// same passages in a text.
func TestSameAsSQLite(t *testing.T) {
	ctx := t.Context()
	run := sametest.Start(t, "memory", memstore.New(memstore.Options{}))
	run.Items(t)

	// A text of one piece: the same passages, whatever their order.
	run.PutText(t, "sametext", run.Words(1500))
	for _, q := range []string{"école", "naive cloud", "C++ e-mail", "running connections", "zebra quokka"} {
		var got [2][]store.TextHit
		for i, s := range run.Stores {
			hits, err := s.SearchText(ctx, "sametext", store.TextQuery{Text: q, Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			for j := range hits {
				hits[j].Score = 0
			}
			slices.SortFunc(hits, func(a, b store.TextHit) int { return int(a.Offset - b.Offset) })
			got[i] = hits
		}
		if len(got[0]) == 0 || !slices.Equal(got[0], got[1]) {
			t.Errorf("SearchText(%q):\n memory %+v\n SQLite %+v", q, got[0], got[1])
		}
	}
}
