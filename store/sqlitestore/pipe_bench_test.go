package sqlitestore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/store"
	qry "github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/storetest"
)

// pipeBenchItems makes n items of about 400 bytes: an id, a title, a body,
// one of 8 categories, a float score, a year, tags and an author with a
// name (one of 500) and an h-index.
func pipeBenchItems(n int) []json.RawMessage {
	r := rand.New(rand.NewPCG(3, 4))
	cats := []string{"ml", "db", "os", "net", "ui", "pl", "hci", "sec"}
	words := []string{"fast", "robust", "lazy", "deep", "tiny", "queues", "graphs", "caches", "parsers", "models",
		"systems", "learning", "storage", "networks", "proofs", "compilers"}
	tagSet := []string{"gpu", "beta", "new", "old", "safe", "fast", "open", "draft"}
	type author struct {
		Name string `json:"name"`
		H    int    `json:"h"`
	}
	type doc struct {
		ID       int      `json:"id"`
		Title    string   `json:"title"`
		Body     string   `json:"body"`
		Category string   `json:"category"`
		Score    float64  `json:"score"`
		Year     int      `json:"year"`
		Tags     []string `json:"tags"`
		Author   author   `json:"author"`
	}
	sentence := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	items := make([]json.RawMessage, n)
	for i := range items {
		d := doc{
			ID:       i,
			Title:    sentence(4),
			Body:     sentence(35),
			Category: cats[r.IntN(len(cats))],
			Score:    float64(r.IntN(100000)) / 1000,
			Year:     1990 + r.IntN(36),
			Tags:     []string{tagSet[r.IntN(len(tagSet))], tagSet[r.IntN(len(tagSet))]},
			Author:   author{Name: fmt.Sprintf("Author %03d", r.IntN(500)), H: r.IntN(80)},
		}
		b, err := json.Marshal(d)
		if err != nil {
			panic(err)
		}
		items[i] = b
	}
	return items
}

// BenchmarkPipe100k compares Pipe (pipe: as it chooses, projecting
// aggregating pipelines; sql: always running a prefix in SQL) with Run over
// every item streamed out of the store, on 100,000 items of about 400
// bytes.
func BenchmarkPipe100k(b *testing.B) {
	ctx := context.Background()
	// Indexed inside Put, so that no background indexing runs during the
	// measurements.
	s, err := Open(ctx, filepath.Join(b.TempDir(), "ctxkit.db"), Options{indexInline: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	items := pipeBenchItems(100_000)
	size := 0
	for _, it := range items {
		size += len(it)
	}
	ws := &store.Workspace{ID: "bench", Type: "test", Shape: store.ShapeList, Format: "json", Producer: "pipe_bench"}
	if err := s.Put(ctx, ws, &store.Content{Items: items}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d items, %d bytes each on average", len(items), size/len(items))
	// year >= 2010 and category in ml, db, os.
	filter := qry.Filter{Cond: qry.And{Conds: []qry.Cond{
		qry.FieldCond{Path: "category", Op: qry.OpIn, Value: []any{"ml", "db", "os"}},
		qry.FieldCond{Path: "year", Op: qry.OpGte, Value: 2010.0},
	}}}
	pipelines := []struct {
		name string
		p    *qry.Pipeline
	}{
		{"group", &qry.Pipeline{Steps: []qry.Step{filter,
			qry.GroupBy{Path: "author.name", Metrics: []qry.Metric{{Name: "avg", Func: qry.MetricMean, Path: "score"}, {Name: "n", Func: qry.MetricCount}}},
			qry.Sort{Keys: []qry.SortKey{{Path: "n", Desc: true}}},
			qry.Limit{N: 10},
		}}},
		{"count", &qry.Pipeline{Steps: []qry.Step{filter, qry.Count{}}}},
		{"sort_limit", &qry.Pipeline{Steps: []qry.Step{filter, qry.Sort{Keys: []qry.SortKey{{Path: "score", Desc: true}}}, qry.Limit{N: 10}}}},
	}
	for _, pc := range pipelines {
		p := pc.p
		want, err := storetest.RunGo(ctx, s, "bench", p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(pc.name+"/pipe", func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				got, _, err := s.pipe(ctx, "bench", p)
				if err != nil {
					b.Fatal(err)
				}
				if storetest.Canon(got) != storetest.Canon(want) {
					b.Fatalf("Pipe gave %s, want %s", storetest.Canon(got), storetest.Canon(want))
				}
			}
		})
		b.Run(pc.name+"/sql", func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				got, pushed, err := s.pipeWith(ctx, "bench", p, pipeSQL)
				if err != nil {
					b.Fatal(err)
				}
				if pushed == 0 || storetest.Canon(got) != storetest.Canon(want) {
					b.Fatalf("Pipe ran %d steps in SQL and gave %s, want %s", pushed, storetest.Canon(got), storetest.Canon(want))
				}
			}
		})
		b.Run(pc.name+"/go", func(b *testing.B) {
			defer reportCPU(b, cpuTime())
			for b.Loop() {
				if _, err := storetest.RunGo(ctx, s, "bench", p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
