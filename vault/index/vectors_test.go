package index_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/index"
)

// memVectors is an index that only has vectors, for LoadVectors.
type memVectors struct {
	index.Index
	vs [][]float32
}

func (m memVectors) EachVector(_ context.Context, fn func(int64, []float32) error) error {
	for i, v := range m.vs {
		if err := fn(int64(i+1), v); err != nil {
			return err
		}
	}
	return nil
}

func randomVectors(n, dim int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		embed.Normalize(v)
		out[i] = v
	}
	return out
}

// Search gives exactly what a brute-force scan gives, split over cores.
func TestSearchMatchesBruteForce(t *testing.T) {
	for _, n := range []int{1, 10, 5000, 20000} {
		data := randomVectors(n, 32, uint64(n))
		vs, err := index.LoadVectors(t.Context(), memVectors{vs: data})
		if err != nil {
			t.Fatal(err)
		}
		q := randomVectors(1, 32, 99)[0]
		got, err := vs.Search(q, 7)
		if err != nil {
			t.Fatal(err)
		}
		type pair struct {
			id    int64
			score float32
		}
		var all []pair
		for i, v := range data {
			all = append(all, pair{int64(i + 1), embed.Dot(q, v)})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].score > all[j].score })
		want := min(7, n)
		if len(got) != want {
			t.Fatalf("n=%d: %d hits, want %d", n, len(got), want)
		}
		for i := range got {
			if got[i].ID != all[i].id || got[i].Rank != i+1 {
				t.Fatalf("n=%d: hit %d = %+v, want id %d", n, i, got[i], all[i].id)
			}
		}
	}
	vs, _ := index.LoadVectors(t.Context(), memVectors{vs: randomVectors(3, 4, 1)})
	if _, err := vs.Search([]float32{1, 0}, 2); err == nil {
		t.Error("a query of the wrong dimension: want an error")
	}
	if _, err := index.LoadVectors(t.Context(), memVectors{vs: [][]float32{{1, 0}, {1, 0, 0}}}); err == nil {
		t.Error("vectors of two dimensions: want an error")
	}
}

func TestFuse(t *testing.T) {
	lex := []index.Hit{{Chunk: index.Chunk{ID: 1}, Rank: 1, Score: 9}, {Chunk: index.Chunk{ID: 2}, Rank: 2, Score: 5}, {Chunk: index.Chunk{ID: 3}, Rank: 3, Score: 1}}
	vec := []index.Hit{{Chunk: index.Chunk{ID: 3}, Rank: 1, Score: 0.9}, {Chunk: index.Chunk{ID: 4}, Rank: 2, Score: 0.8}, {Chunk: index.Chunk{ID: 1}, Rank: 3, Score: 0.1}}
	got := index.Fuse(lex, vec, 10)
	var ids []int64
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	// 1: 1/61+1/63; 3: 1/63+1/61 (tie, lexically worse); 2: 1/62; 4: 1/62 (tie: 2 was found lexically).
	if !slices.Equal(ids, []int64{1, 3, 2, 4}) {
		t.Errorf("fused order %v, want [1 3 2 4]", ids)
	}
	if got[1].LexicalRank != 3 || got[1].VectorRank != 1 || got[1].VectorScore != 0.9 {
		t.Errorf("signals of chunk 3: %+v", got[1])
	}
	if len(index.Fuse(lex, vec, 2)) != 2 {
		t.Error("n is not respected")
	}
	if len(index.Fuse(nil, nil, 5)) != 0 {
		t.Error("nothing fused from nothing")
	}
}

// BenchmarkSearch100k is the vector half of a hybrid query at the issue's
// scale: 100,000 chunks of 384 dimensions (all-MiniLM's).
func BenchmarkSearch100k(b *testing.B) {
	vs, err := index.LoadVectors(b.Context(), memVectors{vs: randomVectors(100000, 384, 7)})
	if err != nil {
		b.Fatal(err)
	}
	q := randomVectors(1, 384, 8)[0]
	for b.Loop() {
		if _, err := vs.Search(q, 10); err != nil {
			b.Fatal(err)
		}
	}
}
