package pgstore

import (
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/sametest"
)

// TestSameAsSQLite checks that the store finds and ranks exactly as the
// SQLite store: the same hits, in the same order, with the same scores,
// and the same totals, also after mutations (sametest); and the same
// passages, in the same order with the same scores, in a text of several
// chunks.
func TestSameAsSQLite(t *testing.T) {
	ctx := t.Context()
	run := sametest.Start(t, "PostgreSQL", NewStore(newDB(t)))
	run.Items(t)

	run.PutText(t, "sametext", run.Words(40000))
	for _, q := range []store.TextQuery{{Text: "école"}, {Text: "naive cloud", Limit: 50}, {Text: "C++ e-mail", Limit: 10000},
		{Text: "running connections"}, {Text: "zebra quokka", Limit: 10000}, {Text: "xample.co"}} {
		var got [2][]store.TextHit
		for i, s := range run.Stores {
			var err error
			if got[i], err = s.SearchText(ctx, "sametext", q); err != nil {
				t.Fatal(err)
			}
		}
		if len(got[1]) == 0 || !slices.Equal(got[0], got[1]) {
			t.Errorf("SearchText(%+v):\n PostgreSQL %+v\n SQLite     %+v", q, got[0], got[1])
		}
	}
}
