package rank

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// ReadChunk returns chunk c of a text: the offset of its first character
// in the text, and its text. next is the chunks still to read, best first,
// beginning with c, for a store that reads a few at once.
type ReadChunk func(c int, next []int) (start int64, text string, err error)

// Passages finds the passages of a text of n chunks that match q, best
// first: those holding more distinct terms, then those with rarer terms
// (IDF over chunks) and more matches, then the earlier. Postings say which
// chunks may hold which terms; chunks are read in order of how many terms
// they may hold, and matches located in Go, until no unread chunk can hold
// a passage with more terms than the first limit found. A passage lies
// within one chunk.
func Passages(q *textsearch.Query, n int, postings Postings, read ReadChunk, limit int) ([]store.TextHit, error) {
	// present[c] holds the terms chunk c may contain.
	present := make([]textsearch.TermSet, n)
	df := make([]int, len(q.Terms))
	for i, term := range q.Terms {
		rows, known, err := postings(i)
		if err != nil {
			return nil, fmt.Errorf("look up %q: %w", term.Text, err)
		}
		if !known {
			// Unknown: any chunk may hold the substring.
			for c := range present {
				present[c].Add(i)
			}
			df[i] = n
			continue
		}
		for _, c := range rows {
			if c < 0 || c >= int64(n) {
				return nil, fmt.Errorf("index names chunk %d of %d", c, n)
			}
			present[c].Add(i)
		}
		df[i] = len(rows)
	}
	idf := make([]float64, len(q.Terms))
	for i := range idf {
		idf[i] = math.Log(1 + float64(n)/float64(max(df[i], 1)))
	}

	order := make([]int, 0, n)
	for c := range present {
		if present[c].Len() > 0 {
			order = append(order, c)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(present[b].Len(), present[a].Len()) })

	m := textsearch.NewMatcher(q)
	var (
		hits    []store.TextHit
		matches []textsearch.Occurrence
	)
	for k, c := range order {
		bound := present[c].Len()
		if len(hits) >= limit {
			slices.SortFunc(hits, compareTextHits)
			hits = hits[:limit]
			if hits[limit-1].Terms >= bound {
				break
			}
		}
		start, text, err := read(c, order[k:])
		if err != nil {
			return nil, err
		}
		matches = m.Locate(matches[:0], text, &present[c])
		hits = appendPassages(hits, matches, start, idf)
	}
	slices.SortFunc(hits, compareTextHits)
	return hits[:min(limit, len(hits))], nil
}

func compareTextHits(a, b store.TextHit) int {
	if c := cmp.Compare(b.Terms, a.Terms); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Offset, b.Offset)
}

// appendPassages groups matches into passages (textsearch.Passages) and
// appends a hit for each, scored by its terms' IDF and, a little, by its
// matches.
func appendPassages(hits []store.TextHit, matches []textsearch.Occurrence, chunkStart int64, idf []float64) []store.TextHit {
	var g textsearch.Passages
	hit := func(p textsearch.Passage) {
		score := 0.1 * math.Log(float64(1+p.Matches))
		for t := range idf {
			if p.Terms.Has(t) {
				score += idf[t]
			}
		}
		hits = append(hits, store.TextHit{Offset: p.Offset, Length: p.Runes, Score: score, Terms: p.Terms.Len()})
	}
	for _, o := range matches {
		if p, ok := g.Add(o, chunkStart+int64(o.Offset)); ok {
			hit(p)
		}
	}
	if p, ok := g.Close(); ok {
		hit(p)
	}
	return hits
}

// Span returns the part of a text chunk that lies in the character range
// [offset, end), the chunk starting at character start: how the stores
// that keep a text in chunks cut a TextSlice from the chunks it touches.
func Span(chunk []byte, start, offset, end int64) []byte {
	from := max(offset-start, 0) // characters to skip in this chunk
	want := end - max(start, offset)
	i := 0
	for ; from > 0 && i < len(chunk); from-- {
		_, w := utf8.DecodeRune(chunk[i:])
		i += w
	}
	j := i
	for ; want > 0 && j < len(chunk); want-- {
		_, w := utf8.DecodeRune(chunk[j:])
		j += w
	}
	return chunk[i:j]
}
