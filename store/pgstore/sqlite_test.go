package pgstore

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
)

// sameVocabulary mixes common and rare words, stems of one word, case,
// diacritics and terms with symbols.
var sameVocabulary = strings.Fields(`the of and cloud clouds Cloudy cost costs costing budget connect connected
connection CONNECTIONS école ECOLE ecole naïve NAÏVETÉ naive café Café résumé Straße C++ e-mail E-Mail
x@example.com 2024 v2 42 runner running runs ran zebra quokka axolotl`)

// TestSameAsSQLite checks that the store finds and ranks exactly as the
// SQLite store: the same hits, in the same order, with the same scores,
// and the same totals, also after mutations; and the same passages, in
// the same order with the same scores, in a text of several chunks.
func TestSameAsSQLite(t *testing.T) {
	ctx := t.Context()
	lite, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "ctxkit.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := NewStore(newDB(t))
	stores := []store.Store{pg, lite}

	r := rand.New(rand.NewPCG(3, 14))
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			// Low indexes are much more common.
			ws[i] = sameVocabulary[int(float64(len(sameVocabulary))*r.Float64()*r.Float64())]
		}
		return strings.Join(ws, " ")
	}
	item := func() json.RawMessage {
		b, err := json.Marshal(map[string]any{"title": words(1 + r.IntN(4)), "body": words(r.IntN(30)),
			"tags": []string{words(1), words(1)}, "n": r.IntN(100)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	items := make([]json.RawMessage, 300)
	for i := range items {
		items[i] = item()
	}
	ws := &store.Workspace{ID: "same", Type: "t", Shape: store.ShapeList, Producer: "p"}
	for _, s := range stores {
		if err := s.Put(ctx, ws, &store.Content{Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []store.Query{{Text: "école"}, {Text: "naive cloud"}, {Text: "C++ e-mail"}, {Text: "running connections"},
		{Text: "cost", Limit: 300}, {Text: "the", Limit: 50}, {Text: "cloud", Fields: []string{"title"}},
		{Text: "ecole budget", Fields: []string{"body", "tags"}, Limit: 20}, {Text: "x@example.com 42"},
		{Text: "++ xample"}}
	for range 40 {
		queries = append(queries, store.Query{Text: words(1 + r.IntN(4)), Limit: 1 + r.IntN(30)})
	}
	compare := func(step string) {
		t.Helper()
		for _, q := range queries {
			var got [2][]store.Hit
			var total [2]int
			for i, s := range stores {
				if got[i], total[i], err = s.SearchItems(ctx, ws.ID, q); err != nil {
					t.Fatalf("%s: SearchItems(%+v): %v", step, q, err)
				}
			}
			if total[1] == 0 {
				t.Errorf("%s: SearchItems(%+v) found nothing: a useless query", step, q)
			}
			if total[0] != total[1] || !slices.EqualFunc(got[0], got[1], func(a, b store.Hit) bool {
				return a.Index == b.Index && a.Terms == b.Terms && a.Score == b.Score && string(a.Item) == string(b.Item)
			}) {
				t.Errorf("%s: SearchItems(%+v):\n PostgreSQL %d %s\n SQLite     %d %s", step, q, total[0], hitList(got[0]), total[1], hitList(got[1]))
			}
		}
	}
	compare("put")

	more := []json.RawMessage{item(), item(), item()}
	changed := item()
	for _, s := range stores {
		if err := s.AppendItems(ctx, ws.ID, more); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateItem(ctx, ws.ID, 7, changed); err != nil {
			t.Fatal(err)
		}
		if err := s.PatchItem(ctx, ws.ID, 8, json.RawMessage(`{"title":"zebra quokka café"}`)); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteItems(ctx, ws.ID, []int{0, 50, 51, 299}); err != nil {
			t.Fatal(err)
		}
	}
	compare("mutations")

	// A text of several chunks: the same passages, in the same order,
	// with the same scores.
	text := words(40000)
	tw := &store.Workspace{ID: "sametext", Type: "t", Shape: store.ShapeText, Producer: "p"}
	for _, s := range stores {
		if err := s.Put(ctx, tw, &store.Content{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []store.TextQuery{{Text: "école"}, {Text: "naive cloud", Limit: 50}, {Text: "C++ e-mail", Limit: 10000},
		{Text: "running connections"}, {Text: "zebra quokka", Limit: 10000}, {Text: "xample.co"}} {
		var got [2][]store.TextHit
		for i, s := range stores {
			if got[i], err = s.SearchText(ctx, tw.ID, q); err != nil {
				t.Fatal(err)
			}
		}
		if len(got[1]) == 0 || !slices.Equal(got[0], got[1]) {
			t.Errorf("SearchText(%+v):\n PostgreSQL %+v\n SQLite     %+v", q, got[0], got[1])
		}
	}
}

func hitList(hits []store.Hit) string {
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, " %d/%d/%.17g", h.Index, h.Terms, h.Score)
	}
	return b.String()
}
