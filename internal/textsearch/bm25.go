package textsearch

import (
	"cmp"
	"math"
	"slices"
)

// BM25 is computed as SQLite FTS5's bm25() does, in the same order of
// floating-point operations, so that a search in memory scores exactly as
// FTS5 (vault/index.Lexicon checks it against FTS5): a document's score is
// the sum, over the query's terms in order, of
//
//	IDF(documents, documents holding the term) · Weight(frequency, Norm(length, average length))
//
// with FTS5's default parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// IDF is the inverse document frequency of a term held by hits of docs
// documents, as FTS5 has it: log((docs − hits + 0.5) / (hits + 0.5)), and
// 1e-6 where that is not positive (a term in half the documents or more).
func IDF(docs, hits int64) float64 {
	idf := math.Log((float64(docs-hits) + 0.5) / (float64(hits) + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	return idf
}

// Norm is k1 · (1 − b + b · length / avgLength), the part of a document's
// length in each of its terms' weights.
func Norm(length, avgLength float64) float64 {
	// Variables, not constants, so that Go computes in float64 at run time,
	// as C does, not exactly at compile time.
	k1, b := float64(K1), float64(B)
	return k1 * (1 - b + b*length/avgLength)
}

// Weight is what a term adds to a document's score: idf · freq · (k1 + 1)
// / (freq + norm), for a term occurring freq times in a document whose
// Norm is norm.
func Weight(idf, freq, norm float64) float64 {
	k1 := float64(K1)
	// The conversions forbid fused multiply-adds, which C does not do
	// either.
	return float64(idf * float64(float64(freq*(k1+1))/float64(freq+norm)))
}

// ScoreCap bounds the candidates Rank scores by BM25, which needs each
// one's term frequencies: past it, candidates are ranked on their terms'
// IDF alone.
const ScoreCap = 5000

// Candidate is a document that matched at least one term of a query.
type Candidate struct {
	// Doc is the document's position; the lower ranks first among equals.
	Doc int64
	// Terms are the query's terms it matched.
	Terms TermSet
	// Score is its relevance, set by Rank.
	Score float64
	n     int // Terms.Len()
}

// Stats describe the documents a query searched.
type Stats struct {
	Terms int // in the query
	Docs  int // documents searched
	// AvgLen is the documents' average length, in the unit of Measure.Len.
	AvgLen float64
}

// Measure is what Rank needs to know of a candidate to score it.
type Measure struct {
	// Len is the document's length.
	Len float64
	// Freq is how often each term of the query occurs in it
	// (Matcher.Count); a term it matched counts at least once.
	Freq []int
}

// Rank returns the best limit candidates, best first: those that matched
// more distinct terms, then those of higher BM25 score, then the lower
// Doc. A term's IDF counts the candidates holding it among stats.Docs
// documents. Only the candidates that can reach the first limit places by
// their distinct terms are scored, and measure gives their measures, in
// order; when there are more than ScoreCap of them, measure is not called
// and each scores the sum of its terms' IDF. Rank reorders cands.
func Rank(cands []Candidate, stats Stats, limit int, measure func(contenders []Candidate) ([]Measure, error)) ([]Candidate, error) {
	if len(cands) == 0 || limit <= 0 {
		return nil, nil
	}
	byTerms := make([]int, stats.Terms+1)
	df := make([]int64, stats.Terms)
	for i := range cands {
		c := &cands[i]
		c.n, c.Score = c.Terms.Len(), 0
		byTerms[c.n]++
		for t := range df {
			if c.Terms.Has(t) {
				df[t]++
			}
		}
	}
	// The candidates with at least floor terms fill the first limit
	// places, or all there are.
	floor, seen := len(byTerms)-1, 0
	for ; floor > 1; floor-- {
		if seen += byTerms[floor]; seen >= limit {
			break
		}
	}
	contenders := cands[:0]
	for _, c := range cands {
		if c.n >= floor {
			contenders = append(contenders, c)
		}
	}
	idf := make([]float64, len(df))
	for t, n := range df {
		idf[t] = IDF(int64(stats.Docs), n)
	}

	if len(contenders) <= ScoreCap {
		ms, err := measure(contenders)
		if err != nil {
			return nil, err
		}
		avg := max(stats.AvgLen, 1)
		for i := range contenders {
			c, m := &contenders[i], ms[i]
			norm := Norm(m.Len, avg)
			for t := range idf {
				if c.Terms.Has(t) {
					c.Score += Weight(idf[t], float64(max(m.Freq[t], 1)), norm)
				}
			}
		}
	} else {
		for i := range contenders {
			c := &contenders[i]
			for t := range idf {
				if c.Terms.Has(t) {
					c.Score += idf[t]
				}
			}
		}
	}
	slices.SortFunc(contenders, func(a, b Candidate) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	return contenders[:min(limit, len(contenders))], nil
}
