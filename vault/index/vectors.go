package index

import (
	"container/heap"
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// Vectors holds the chunk vectors of an index in one contiguous block, for
// exact cosine search (the vectors are normalised, so a dot product): at
// 100k chunks of 384 dimensions that is 150 MB and a few milliseconds a
// query on two cores, with no approximate index to build or to get wrong.
type Vectors struct {
	dim  int
	ids  []int64
	data []float32 // len(ids) × dim
}

// LoadVectors reads every vector of idx. All must have the same dimension.
func LoadVectors(ctx context.Context, idx Index) (*Vectors, error) {
	vs := &Vectors{}
	err := idx.EachVector(ctx, func(id int64, v []float32) error {
		if vs.dim == 0 {
			vs.dim = len(v)
		}
		if len(v) != vs.dim {
			return fmt.Errorf("chunk %d has a vector of %d dimensions, others have %d", id, len(v), vs.dim)
		}
		vs.ids = append(vs.ids, id)
		vs.data = append(vs.data, v...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	return vs, nil
}

// Len is the number of vectors.
func (vs *Vectors) Len() int { return len(vs.ids) }

// Dim is the vectors' dimension, 0 when there are none.
func (vs *Vectors) Dim() int { return vs.dim }

// scored is a search candidate.
type scored struct {
	id    int64
	score float32
}

// topK is a min-heap of the best k candidates seen so far.
type topK []scored

func (h topK) Len() int           { return len(h) }
func (h topK) Less(i, j int) bool { return h[i].score < h[j].score }
func (h topK) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topK) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *topK) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *topK) offer(s scored, k int) {
	if h.Len() < k {
		heap.Push(h, s)
	} else if s.score > (*h)[0].score {
		(*h)[0] = s
		heap.Fix(h, 0)
	}
}

// Search returns the ids of the n vectors most similar to q, best first,
// with their cosine similarities as scores. The scan is split over the
// cores.
func (vs *Vectors) Search(q []float32, n int) ([]Hit, error) {
	if vs.Len() == 0 || n <= 0 {
		return nil, nil
	}
	if len(q) != vs.dim {
		return nil, fmt.Errorf("query vector of %d dimensions against vectors of %d", len(q), vs.dim)
	}
	parts := min(runtime.GOMAXPROCS(0), max(1, vs.Len()/4096))
	heaps := make([]topK, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*vs.Len()/parts, (p+1)*vs.Len()/parts
		wg.Go(func() {
			h := make(topK, 0, n+1)
			for i := lo; i < hi; i++ {
				h.offer(scored{vs.ids[i], embed.Dot(q, vs.data[i*vs.dim:(i+1)*vs.dim])}, n)
			}
			heaps[p] = h
		})
	}
	wg.Wait()
	var all topK
	for _, h := range heaps {
		for _, s := range h {
			all.offer(s, n)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].id < all[j].id
	})
	hits := make([]Hit, len(all))
	for i, s := range all {
		hits[i] = Hit{Chunk: Chunk{ID: s.id}, Score: float64(s.score), Rank: i + 1}
	}
	return hits, nil
}

// RRFK is the constant of reciprocal rank fusion: a hit at rank r in one
// signal adds 1/(RRFK+r) to its fused score. 60 is the value of the
// original paper and of most hybrid search engines.
const RRFK = 60

// Fused is a chunk found by hybrid search: its fused score and the rank
// and score it had in each signal (0 when that signal did not find it).
type Fused struct {
	ID           int64
	Score        float64
	LexicalRank  int
	LexicalScore float64
	VectorRank   int
	VectorScore  float64
}

// Fuse merges lexical and vector hits by reciprocal rank, best first; ties
// go to the lexically better, then to the lower id, so results are stable.
func Fuse(lexical, vector []Hit, n int) []Fused {
	by := map[int64]*Fused{}
	get := func(id int64) *Fused {
		f := by[id]
		if f == nil {
			f = &Fused{ID: id}
			by[id] = f
		}
		return f
	}
	for _, h := range lexical {
		f := get(h.ID)
		f.LexicalRank, f.LexicalScore = h.Rank, h.Score
		f.Score += 1 / float64(RRFK+h.Rank)
	}
	for _, h := range vector {
		f := get(h.ID)
		f.VectorRank, f.VectorScore = h.Rank, h.Score
		f.Score += 1 / float64(RRFK+h.Rank)
	}
	out := make([]Fused, 0, len(by))
	for _, f := range by {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if (a.LexicalRank == 0) != (b.LexicalRank == 0) {
			return a.LexicalRank != 0
		}
		if a.LexicalRank != b.LexicalRank {
			return a.LexicalRank < b.LexicalRank
		}
		return a.ID < b.ID
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
