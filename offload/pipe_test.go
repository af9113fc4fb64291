package offload

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ctxkit/ctxkit/offload/pipeline"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/memstore"
	"github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/query/querytest"
	"github.com/ctxkit/ctxkit/store/sqlitestore"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// pipeStores returns an engine on each kind of store: memstore runs
// pipelines in Go, sqlitestore pushes them down to SQL (store.Piper).
func pipeStores(tb testing.TB) map[string]*Engine {
	tb.Helper()
	mem := memstore.New(memstore.Options{})
	sq, err := sqlitestore.Open(context.Background(), filepath.Join(tb.TempDir(), "ctxkit.db"), sqlitestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		mem.Close()
		sq.Close()
	})
	return map[string]*Engine{"memstore": New(mem), "sqlitestore": New(sq)}
}

// putItems stores items as the list workspace id.
func putItems(tb testing.TB, s store.Store, id string, items []json.RawMessage) {
	tb.Helper()
	ws := &store.Workspace{ID: id, Type: "test", Shape: store.ShapeList, Format: "json", Producer: "pipe_test"}
	if err := s.Put(context.Background(), ws, &store.Content{Items: items}); err != nil {
		tb.Fatalf("Put %s: %v", id, err)
	}
}

// TestPipeConformance runs every shared conformance vector through the
// engine's pipelines on each store, the way result_pipe runs them.
func TestPipeConformance(t *testing.T) {
	items, cases := querytest.LoadConformance(t)
	for name, e := range pipeStores(t) {
		putItems(t, e.store, "conf", items)
		for _, c := range cases {
			p, err := pipeline.Parse(c.Steps)
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.Steps, err)
			}
			got, err := e.runPipe(t.Context(), "conf", p)
			if err != nil {
				t.Fatalf("%s: line %d, %s: %v", name, c.Line, c.Steps, err)
			}
			want, err := query.Decode(c.Expected)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if got, err = query.Decode(b); err != nil {
				t.Fatal(err)
			}
			if d := querytest.Diff(got, want); d != "" {
				t.Errorf("%s: line %d, steps %s\n%s", name, c.Line, c.Steps, d)
			}
		}
	}
}

// FuzzPipe checks the pipelines of every store against the Go evaluator
// over the same items, on pipelines the fuzzer derives from the seeds, on
// the item sets of the stores' conformance suite.
func FuzzPipe(f *testing.F) {
	for _, s := range []string{
		`[{"filter": {"n": {"$gt": 1}, "s": {"$startswith": ""}}}, {"sort": {"field": "v", "order": "desc"}}, {"limit": 3}]`,
		`[{"filter": {"$not": {"tags": {"$contains": "x"}}}}, {"group_by": {"field": "kind", "metrics": {"n": "count", "m": "median:n"}}}]`,
		`[{"filter": {"big": {"$in": [9007199254740993, "1", null]}}}, {"count": true}]`,
		`[{"sort": [{"field": "s"}, {"field": "n", "order": "desc"}]}, {"skip": 1}, {"slice": [0, 4]}]`,
		`[{"filter": {"author.h": {"$gte": 2}, "tags.0": {"$exists": true}}}, {"select": ["id"]}]`,
		`[{"filter": {"v": {"$ne": null}}}, {"group_by": {"field": "v", "metrics": {"t": "sum:n", "lo": "min:v", "sd": "stddev:n"}}}]`,
		`[{"filter": {"s": {"$lt": "beta"}}}, {"unique": "kind"}, {"flatten": "tags"}]`,
		`[{"filter": {"n": 1.905409544972363e10}}, {"sort": {"field": "n"}}]`,
	} {
		f.Add(s)
	}
	engines := pipeStores(f)
	lists := storetest.PipeItems()
	names := slices.Sorted(maps.Keys(lists))
	for _, e := range engines {
		for _, name := range names {
			putItems(f, e.store, name, lists[name])
		}
	}
	f.Fuzz(func(t *testing.T, steps string) {
		p, err := pipeline.Parse(json.RawMessage(steps))
		if err != nil {
			return
		}
		for kind, e := range engines {
			for _, name := range names {
				want, werr := storetest.RunGo(t.Context(), e.store, name, p)
				got, gerr := e.runPipe(t.Context(), name, p)
				if (werr != nil) != (gerr != nil) || storetest.Canon(got) != storetest.Canon(want) {
					t.Fatalf("%s, %s on %s: got %s (%v), Run gives %s (%v)", kind, steps, name, storetest.Canon(got), gerr, storetest.Canon(want), werr)
				}
			}
		}
	})
}
