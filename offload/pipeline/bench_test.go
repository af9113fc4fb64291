package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ctxkit/ctxkit/store/query"
	"github.com/ctxkit/ctxkit/store/query/querytest"
)

// benchItems makes n decoded items shaped like a typical tool result.
func benchItems(n int) []any {
	rng := rand.New(rand.NewPCG(1, 2))
	cats := []string{"ui", "os", "db", "net", "ml", "sec", "web", "hpc"}
	names := []string{"Ada", "Ken", "Grace", "Linus", "Barbara", "Edsger", "Margaret", "Donald"}
	out := make([]any, n)
	for i := range out {
		item := map[string]any{
			"id":       float64(i),
			"title":    fmt.Sprintf("Paper %d on %s", i, cats[i%len(cats)]),
			"year":     float64(2015 + rng.IntN(11)),
			"score":    float64(rng.IntN(10000)) / 100,
			"category": cats[rng.IntN(len(cats))],
			"author":   map[string]any{"name": names[rng.IntN(len(names))], "h": float64(rng.IntN(60))},
			"tags":     []any{"a", "b"},
			"active":   rng.IntN(3) > 0,
		}
		if i%7 == 0 {
			item["score"] = nil
		}
		out[i] = item
	}
	return out
}

func benchPipeline(b *testing.B, steps string, n int) {
	data := benchItems(n)
	p, err := Parse(json.RawMessage(steps))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Run(ctx, querytest.Source(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeFilterGroupSort filters 100,000 items, groups the rest by a
// nested field with five metrics and sorts the groups.
func BenchmarkPipeFilterGroupSort(b *testing.B) {
	benchPipeline(b, `[
		{"filter": {"year": {"$gte": 2018}, "active": true}},
		{"group_by": {"field": "author.name", "metrics": {"n": "count", "avg": "mean:score", "hi": "max:score", "med": "median:score", "sd": "stddev:score"}}},
		{"sort": {"field": "n", "order": "desc"}}]`, 100_000)
}

// BenchmarkPipeFilterSortLimit filters 100,000 items, sorts the rest by two
// keys and keeps the top ten.
func BenchmarkPipeFilterSortLimit(b *testing.B) {
	benchPipeline(b, `[
		{"filter": {"$or": [{"category": {"$in": ["ml", "db"]}}, {"title": {"$contains": "7"}}]}},
		{"sort": [{"field": "score", "order": "desc"}, {"field": "id"}]},
		{"limit": 10}]`, 100_000)
}

// BenchmarkPipeFilterLimit shows a streaming pipeline reading only what it
// needs.
func BenchmarkPipeFilterLimit(b *testing.B) {
	benchPipeline(b, `[{"filter": {"category": "ml"}}, {"select": ["id", "title"]}, {"limit": 10}]`, 100_000)
}

// BenchmarkDecode measures decoding a stored item.
func BenchmarkDecode(b *testing.B) {
	raw, err := json.Marshal(benchItems(1)[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := query.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
