// Package sametest is the differential test of the stores that find and
// rank list items exactly as store/sqlitestore (store/memstore,
// store/pgstore): the same hits, in the same order, with the same scores
// and totals, after a Put and after mutations, against a SQLite store fed
// the same content.
package sametest

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

// vocabulary mixes common and rare words, stems of one word, case,
// diacritics and terms with symbols.
var vocabulary = strings.Fields(`the of and cloud clouds Cloudy cost costs costing budget connect connected
connection CONNECTIONS école ECOLE ecole naïve NAÏVETÉ naive café Café résumé Straße C++ e-mail E-Mail
x@example.com 2024 v2 42 runner running runs ran zebra quokka axolotl`)

// Run is one comparison of a store with SQLite.
type Run struct {
	// Stores are the store under test and the SQLite store, in that order.
	Stores [2]store.Store
	// Words returns n random words of the vocabulary, low ones much more
	// common, from the run's fixed seed.
	Words func(n int) string

	name string
	r    *rand.Rand
}

// Start opens a SQLite store in a temporary directory, closed when the
// test ends, to compare s with; name says which store s is in messages.
func Start(t *testing.T, name string, s store.Store) *Run {
	t.Helper()
	lite, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "ctxkit.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	run := &Run{Stores: [2]store.Store{s, lite}, name: name, r: rand.New(rand.NewPCG(3, 14))}
	run.Words = func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocabulary[int(float64(len(vocabulary))*run.r.Float64()*run.r.Float64())]
		}
		return strings.Join(ws, " ")
	}
	return run
}

// Items puts a list of 300 random items in both stores and checks that
// they answer fifty queries alike, then mutates the list the same way in
// both (append, update, patch, delete) and checks again.
func (run *Run) Items(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	item := func() json.RawMessage {
		b, err := json.Marshal(map[string]any{"title": run.Words(1 + run.r.IntN(4)), "body": run.Words(run.r.IntN(30)),
			"tags": []string{run.Words(1), run.Words(1)}, "n": run.r.IntN(100)})
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
	for _, s := range run.Stores {
		if err := s.Put(ctx, ws, &store.Content{Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	queries := []store.Query{{Text: "école"}, {Text: "naive cloud"}, {Text: "C++ e-mail"}, {Text: "running connections"},
		{Text: "cost", Limit: 300}, {Text: "the", Limit: 50}, {Text: "cloud", Fields: []string{"title"}},
		{Text: "ecole budget", Fields: []string{"body", "tags"}, Limit: 20}, {Text: "x@example.com 42"},
		{Text: "++ xample"}}
	for range 40 {
		queries = append(queries, store.Query{Text: run.Words(1 + run.r.IntN(4)), Limit: 1 + run.r.IntN(30)})
	}
	compare := func(step string) {
		t.Helper()
		for _, q := range queries {
			var got [2][]store.Hit
			var total [2]int
			for i, s := range run.Stores {
				var err error
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
				t.Errorf("%s: SearchItems(%+v):\n %s %d %s\n SQLite %d %s", step, q, run.name, total[0], hitList(got[0]), total[1], hitList(got[1]))
			}
		}
	}
	compare("put")

	more := []json.RawMessage{item(), item(), item()}
	changed := item()
	for _, s := range run.Stores {
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
}

// PutText puts text in both stores as a text workspace with id.
func (run *Run) PutText(t *testing.T, id, text string) {
	t.Helper()
	tw := &store.Workspace{ID: id, Type: "t", Shape: store.ShapeText, Producer: "p"}
	for _, s := range run.Stores {
		if err := s.Put(t.Context(), tw, &store.Content{Text: text}); err != nil {
			t.Fatal(err)
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
