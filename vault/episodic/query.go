package episodic

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// The orders of Query.
const (
	OrderRelevance = "relevance"
	OrderRecency   = "recency"
	OrderSalience  = "salience"
	OrderComposite = "composite"
)

// DefaultHalfLife is how long recency takes to halve.
const DefaultHalfLife = 30 * 24 * time.Hour

// Result counts of one query.
const (
	DefaultLimit = 10
	MaxLimit     = 200
)

// DefaultOrder is the order of a query that names order (or none): by
// relevance with text, by recency without.
func DefaultOrder(order, text string) string {
	switch {
	case order != "":
		return order
	case text != "":
		return OrderRelevance
	}
	return OrderRecency
}

// rrfK is the reciprocal-rank constant of the fusion of BM25 and vectors.
const rrfK = 60

// Weights of the composite score; nil fields are 1.
type Weights struct {
	Relevance *float64 `json:"relevance,omitempty"`
	Recency   *float64 `json:"recency,omitempty"`
	Salience  *float64 `json:"salience,omitempty"`
}

// Query asks what the vault holds.
type Query struct {
	Filter
	// Text, when set, is matched by BM25 (and by vector similarity when
	// the memory has an embedder).
	Text string
	// OrderBy is relevance, recency, salience or composite; by default
	// relevance with text, recency without.
	OrderBy string
	// Limit is the number of results, 10 by default, at most MaxLimit.
	Limit int
	// HalfLife is recency's half-life, DefaultHalfLife when zero.
	HalfLife time.Duration
	Weights  Weights
	// Reinforce records a recall of each result.
	Reinforce bool
}

// Match is an episode a query returned, with the parts of its score.
type Match struct {
	Episode
	Score float64
	// Relevance is in [0, 1]: BM25 relative to the best match, or, with
	// vectors, the reciprocal-rank fusion of BM25 and similarity relative
	// to its maximum. BM25 and Similarity are the raw signals (0 when the
	// signal did not find the episode).
	Relevance  float64
	BM25       float64
	Similarity float64
	// Recency is 0.5^(age / half-life), age from valid_from to the query's
	// valid time, at least 0.
	Recency float64
}

// candidateDepth is how many text matches each signal contributes per
// wanted result.
const candidateDepth = 20

// Query returns the episodes q selects, best first.
func (m *Memory) Query(ctx context.Context, q Query) ([]Match, error) {
	switch {
	case q.Limit == 0:
		q.Limit = DefaultLimit
	case q.Limit < 0 || q.Limit > MaxLimit:
		return nil, fmt.Errorf("%w: limit %d is out of range: give 1 to %d", ErrInvalid, q.Limit, MaxLimit)
	}
	if q.HalfLife < 0 {
		return nil, fmt.Errorf("%w: the half-life must be positive", ErrInvalid)
	}
	if q.HalfLife == 0 {
		q.HalfLife = DefaultHalfLife
	}
	q.OrderBy = DefaultOrder(q.OrderBy, q.Text)
	if q.Weights != (Weights{}) && q.OrderBy != OrderComposite {
		return nil, fmt.Errorf("%w: weights apply to order_by composite only: order by composite, or leave the weights out", ErrInvalid)
	}
	w := [3]float64{1, 1, 1}
	for i, p := range []*float64{q.Weights.Relevance, q.Weights.Recency, q.Weights.Salience} {
		if p != nil {
			if math.IsNaN(*p) || *p < 0 {
				return nil, fmt.Errorf("%w: weights must be at least 0", ErrInvalid)
			}
			w[i] = *p
		}
	}
	switch q.OrderBy {
	case OrderRelevance:
		if q.Text == "" {
			return nil, fmt.Errorf("%w: ordering by relevance needs query text (order by recency, salience or composite without it)", ErrInvalid)
		}
	case OrderRecency, OrderSalience, OrderComposite:
	default:
		return nil, fmt.Errorf("%w: unknown order %q (relevance, recency, salience or composite)", ErrInvalid, q.OrderBy)
	}
	m.resolve(&q.Filter)
	ref := m.clock()
	if q.ValidAt != nil {
		ref = *q.ValidAt
	}
	r := ranker{ref: ref, halfLife: q.HalfLife, w: w, order: q.OrderBy}
	var out []Match
	var err error
	if q.Text != "" {
		out, err = m.textQuery(ctx, &q, &r)
	} else {
		out, err = m.scanQuery(ctx, &q, &r)
	}
	if err != nil {
		return nil, err
	}
	eps := make([]Episode, len(out))
	for i := range out {
		eps[i] = out[i].Episode
	}
	if err := m.store.Annotate(ctx, eps, q.KnownAt); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Episode = eps[i]
	}
	if q.Reinforce && len(out) > 0 {
		c := &Change{}
		for _, e := range out {
			c.Recalls = append(c.Recalls, Recall{Statement: e.ID})
		}
		if _, err := m.store.Apply(ctx, c, m.clock()); err != nil {
			return nil, fmt.Errorf("record the recalls: %w", err)
		}
	}
	return out, nil
}

// resolve normalises the times of f and makes "now" explicit for the
// store.
func (m *Memory) resolve(f *Filter) {
	f.ValidAt, f.KnownAt = normPtr(f.ValidAt), normPtr(f.KnownAt)
	if f.ValidAt == nil && !f.All {
		now := m.clock()
		f.ValidAt = &now
	}
}

type ranker struct {
	ref      time.Time
	halfLife time.Duration
	w        [3]float64
	order    string
}

func (r *ranker) recency(e *Episode) float64 {
	age := r.ref.Sub(e.ValidFrom)
	if age < 0 {
		age = 0
	}
	return math.Pow(0.5, float64(age)/float64(r.halfLife))
}

func (r *ranker) score(m *Match) {
	m.Recency = r.recency(&m.Episode)
	switch r.order {
	case OrderRelevance:
		m.Score = m.Relevance
	case OrderRecency:
		m.Score = m.Recency
	case OrderSalience:
		m.Score = m.Salience
	default:
		m.Score = r.w[0]*m.Relevance + r.w[1]*m.Recency + r.w[2]*m.Salience
	}
}

// better orders matches: higher score, then newer valid_from, then the
// later version.
func better(a, b *Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if !a.ValidFrom.Equal(b.ValidFrom) {
		return a.ValidFrom.After(b.ValidFrom)
	}
	return a.Seq > b.Seq
}

// scanQuery ranks without text. Recency and salience follow a store
// order, so the scan stops at the first episode that scores below the
// current top Limit (ties with the last are still read). Composite scans
// by valid_from and stops once no later episode can beat the top Limit:
// its recency is at most the one just seen and its salience at most 1 (the
// threshold algorithm; exact, not a sample).
func (m *Memory) scanQuery(ctx context.Context, q *Query, r *ranker) ([]Match, error) {
	order := ByValidFrom
	if q.OrderBy == OrderSalience {
		order = BySalience
	}
	top := &matchHeap{}
	err := m.store.Scan(ctx, q.Filter, order, func(e *Episode) bool {
		mt := Match{Episode: *e}
		r.score(&mt)
		if top.Len() < q.Limit {
			heap.Push(top, mt)
		} else if better(&mt, &(*top)[0]) {
			(*top)[0] = mt
			heap.Fix(top, 0)
		}
		if top.Len() < q.Limit {
			return true
		}
		bound := mt.Score
		if q.OrderBy == OrderComposite {
			bound = r.w[1]*mt.Recency + r.w[2]
		}
		return bound >= (*top)[0].Score
	})
	if err != nil {
		return nil, err
	}
	return top.sorted(), nil
}

// textQuery ranks the episodes matching the text: the best BM25 matches
// and, with an embedder, the most similar statements, fused by reciprocal
// rank; relevance is that fusion relative to its maximum.
func (m *Memory) textQuery(ctx context.Context, q *Query, r *ranker) ([]Match, error) {
	depth := max(candidateDepth*q.Limit, 200)
	lexical, err := m.store.Search(ctx, q.Filter, q.Text, depth)
	if err != nil {
		return nil, err
	}
	byID := map[string]*Match{}
	var all []*Match
	for i := range lexical {
		mt := &Match{Episode: lexical[i].Episode, BM25: lexical[i].BM25}
		byID[mt.ID] = mt
		all = append(all, mt)
	}
	if m.embed != nil {
		similar, err := m.similar(ctx, q, depth)
		if err != nil {
			return nil, err
		}
		var missing []string
		for _, s := range similar {
			if byID[s.id] == nil {
				missing = append(missing, s.id)
			}
		}
		if len(missing) > 0 {
			eps, err := m.store.Episodes(ctx, q.Filter, missing)
			if err != nil {
				return nil, err
			}
			for _, e := range eps {
				mt := &Match{Episode: e}
				byID[e.ID] = mt
				all = append(all, mt)
			}
		}
		// Ranks among the candidates the filter kept.
		rank := 0
		for _, s := range similar {
			if mt := byID[s.id]; mt != nil {
				rank++
				mt.Similarity = s.sim
				mt.Relevance += 1 / float64(rrfK+rank)
			}
		}
		for i := range lexical {
			byID[lexical[i].ID].Relevance += 1 / float64(rrfK+i+1)
		}
		for _, mt := range all {
			mt.Relevance /= 2.0 / (rrfK + 1)
		}
	} else if len(lexical) > 0 {
		best := lexical[0].BM25
		for _, mt := range all {
			if best > 0 {
				mt.Relevance = mt.BM25 / best
			}
		}
	}
	for _, mt := range all {
		r.score(mt)
	}
	slices.SortFunc(all, func(a, b *Match) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	out := make([]Match, 0, min(q.Limit, len(all)))
	for _, mt := range all[:min(q.Limit, len(all))] {
		out = append(out, *mt)
	}
	return out, nil
}

type similarity struct {
	id  string
	sim float64
}

// similar returns the depth statements most similar to the query text,
// over every embedding in the store (exact; the filter is applied after).
func (m *Memory) similar(ctx context.Context, q *Query, depth int) ([]similarity, error) {
	vs, err := m.embed.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, fmt.Errorf("embed the query: %w", err)
	}
	qv := vs[0]
	var out []similarity
	err = m.store.EachVector(ctx, func(id string, v []float32) error {
		if len(v) == len(qv) {
			out = append(out, similarity{id, float64(embed.Dot(qv, v))})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b similarity) int { return cmpDesc(a.sim, b.sim) })
	// Look deeper than depth: the filter drops some.
	return out[:min(len(out), 4*depth)], nil
}

// matchHeap is a min-heap of matches by better, the worst on top.
type matchHeap []Match

func (h matchHeap) Len() int           { return len(h) }
func (h matchHeap) Less(i, j int) bool { return better(&h[j], &h[i]) }
func (h matchHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *matchHeap) Push(x any)        { *h = append(*h, x.(Match)) }
func (h *matchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *matchHeap) sorted() []Match {
	out := slices.Clone(*h)
	slices.SortFunc(out, func(a, b Match) int {
		if better(&a, &b) {
			return -1
		}
		if better(&b, &a) {
			return 1
		}
		return 0
	})
	return out
}
