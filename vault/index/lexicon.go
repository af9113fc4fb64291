package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsearch"
)

// ErrInvalidUTF8 is returned by NewLexicon and LoadLexicon for a chunk
// whose text or heading is not valid UTF-8: FTS5 decodes invalid bytes in
// its own way, which the Lexicon does not reproduce, so it could not rank
// such a chunk as the index does. (Extracted text is valid UTF-8.)
var ErrInvalidUTF8 = errors.New("the text is not valid UTF-8")

// Lexicon is an in-memory lexical index of an Index's chunks that finds and
// ranks exactly as the sqliteindex's FTS5 table does: the same tokens
// (textsearch.Tokenize), any query word matching (textsearch.MatchAny),
// and the scores of FTS5's bm25() (textsearch.IDF, Norm and Weight, a
// chunk's text and heading counted as one row), so that hits, order and
// scores are equal to Index.Lexical's.
// Ranking every match of a broad query costs FTS5 75 ms at 100,000 chunks;
// the Lexicon does it in about 3 ms.
//
// Postings are positions into a dense slice of chunk ids with their term
// frequencies: at 100,000 chunks of 60 words, about 8 bytes per distinct
// term of a chunk. A Lexicon is immutable and safe for concurrent use.
type Lexicon struct {
	ids  []int64   // by position, ascending
	norm []float64 // by position: k1 * (1 - b + b*D/avgdl), as bm25 has it
	// terms maps a term to t; its postings are pos[starts[t]:starts[t+1]]
	// and freq[starts[t]:starts[t+1]], by ascending position.
	terms  map[string]uint32
	starts []uint32
	pos    []uint32
	freq   []uint32
	// scratch holds *lexScratch: a score per chunk, reused by queries.
	scratch sync.Pool
}

// lexScratch is one query's working memory.
type lexScratch struct {
	score   []float64 // by position; 0 for chunks not matched yet
	touched []uint32  // positions with a score
}

// TextRow is what the Lexicon indexes of a chunk.
type TextRow struct {
	ID            int64
	Text, Heading string
}

// LoadLexicon reads the text of every chunk of idx and indexes it, the
// tokenizing spread over the cores.
func LoadLexicon(ctx context.Context, idx Index) (*Lexicon, error) {
	var rows []TextRow
	err := idx.EachText(ctx, func(id int64, text, heading string) error {
		rows = append(rows, TextRow{ID: id, Text: text, Heading: heading})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load the lexicon: %w", err)
	}
	return NewLexicon(ctx, rows)
}

// NewLexicon indexes rows; their ids must be distinct, their text valid
// UTF-8 (else ErrInvalidUTF8).
func NewLexicon(ctx context.Context, rows []TextRow) (*Lexicon, error) {
	if !slices.IsSortedFunc(rows, func(a, b TextRow) int { return cmpInt64(a.ID, b.ID) }) {
		rows = slices.Clone(rows)
		slices.SortFunc(rows, func(a, b TextRow) int { return cmpInt64(a.ID, b.ID) })
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].ID == rows[i-1].ID {
			return nil, fmt.Errorf("build the lexicon: chunk %d given twice", rows[i].ID)
		}
	}
	lx := &Lexicon{ids: make([]int64, len(rows)), norm: make([]float64, len(rows)), terms: map[string]uint32{}}
	lengths := make([]uint32, len(rows))
	parts := min(runtime.GOMAXPROCS(0), max(1, len(rows)/1024))
	shards := make([]lexShard, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(rows)/parts, (p+1)*len(rows)/parts
		wg.Go(func() { shards[p].index(ctx, rows, lo, hi, lengths) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("build the lexicon: %w", err)
	}
	for _, s := range shards {
		if s.invalid != nil {
			return nil, fmt.Errorf("build the lexicon: chunk %d: %w", s.invalid.ID, ErrInvalidUTF8)
		}
	}

	// Merge the shards in order, so each term's postings stay sorted.
	var lists [][]uint32 // by term: position, frequency pairs
	for _, s := range shards {
		for lt, term := range s.terms {
			t, ok := lx.terms[term]
			if !ok {
				t = uint32(len(lists))
				lx.terms[term] = t
				lists = append(lists, nil)
			}
			lists[t] = append(lists[t], s.lists[lt]...)
		}
	}
	total := 0
	for _, l := range lists {
		total += len(l) / 2
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("build the lexicon: %d postings is more than it holds", total)
	}
	lx.starts = make([]uint32, 0, len(lists)+1)
	lx.pos = make([]uint32, 0, total)
	lx.freq = make([]uint32, 0, total)
	for _, l := range lists {
		lx.starts = append(lx.starts, uint32(len(lx.pos)))
		for i := 0; i < len(l); i += 2 {
			lx.pos = append(lx.pos, l[i])
			lx.freq = append(lx.freq, l[i+1])
		}
	}
	lx.starts = append(lx.starts, uint32(len(lx.pos)))

	// FTS5's avgdl is the total number of tokens over the number of rows;
	// bm25 divides each row's length by it.
	var tokens int64
	for i, r := range rows {
		lx.ids[i] = r.ID
		tokens += int64(lengths[i])
	}
	if len(rows) > 0 {
		avgdl := float64(tokens) / float64(len(rows))
		for i, n := range lengths {
			lx.norm[i] = textsearch.Norm(float64(n), avgdl)
		}
	}
	lx.scratch.New = func() any { return &lexScratch{score: make([]float64, len(lx.ids))} }
	return lx, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lexShard indexes a range of rows.
type lexShard struct {
	invalid *TextRow // the first row that is not valid UTF-8
	terms   []string
	lists   [][]uint32 // by local term: position, frequency pairs
}

func (s *lexShard) index(ctx context.Context, rows []TextRow, lo, hi int, lengths []uint32) {
	local := map[string]uint32{}  // term → local term
	byWord := map[string]uint32{} // unstemmed token → local term, to stem each word once
	var tz textsearch.Tokenizer
	for i := lo; i < hi; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return
		}
		if !utf8.ValidString(rows[i].Text) || !utf8.ValidString(rows[i].Heading) {
			s.invalid = &rows[i]
			return
		}
		n := uint32(0)
		add := func(tok *textsearch.Token) bool {
			n++
			w := tok.Folded
			t, ok := byWord[string(w)]
			if !ok {
				word := string(w)
				term := textsearch.Stem(w)
				if t, ok = local[string(term)]; !ok {
					t = uint32(len(s.terms))
					local[string(term)] = t
					s.terms = append(s.terms, string(term))
					s.lists = append(s.lists, nil)
				}
				byWord[word] = t
			}
			l := s.lists[t]
			if k := len(l); k > 0 && l[k-2] == uint32(i) {
				l[k-1]++
			} else {
				s.lists[t] = append(l, uint32(i), 1)
			}
			return true
		}
		tz.Each(rows[i].Text, add)
		tz.Each(rows[i].Heading, add)
		lengths[i] = n
	}
}

// Len is the number of chunks indexed.
func (lx *Lexicon) Len() int { return len(lx.ids) }

// Terms is the number of distinct terms.
func (lx *Lexicon) Terms() int { return len(lx.terms) }

// Search returns up to n chunks matching any word of query, best first by
// BM25, ties by ascending id: the hits of Index.Lexical, with the same
// scores, but only the chunk ids filled in. A query without words, or
// without matches, gives none.
func (lx *Lexicon) Search(query string, n int) []Hit {
	// Each word of the query is one token: its term. A repeated word
	// counts as often as it is repeated, as in FTS5.
	terms := textsearch.Tokenize(query)
	if len(terms) == 0 || n <= 0 || len(lx.ids) == 0 {
		return nil
	}

	s := lx.scratch.Get().(*lexScratch)
	defer lx.scratch.Put(s)
	rows := int64(len(lx.ids))
	// Term at a time, in query order: each chunk's score is the sum of its
	// terms' parts in the order bm25() adds them (parts of absent terms are
	// zero and change nothing).
	for _, term := range terms {
		t, ok := lx.terms[term]
		if !ok {
			continue
		}
		lo, hi := lx.starts[t], lx.starts[t+1]
		idf := textsearch.IDF(rows, int64(hi-lo))
		for j := lo; j < hi; j++ {
			p := lx.pos[j]
			part := textsearch.Weight(idf, float64(lx.freq[j]), lx.norm[p])
			if s.score[p] == 0 {
				s.touched = append(s.touched, p)
			}
			s.score[p] = s.score[p] + part
		}
	}

	top := textsearch.NewTop(n)
	for _, p := range s.touched {
		top.Offer(int64(p), s.score[p])
	}
	for _, p := range s.touched {
		s.score[p] = 0
	}
	s.touched = s.touched[:0]

	// Positions are in the order of ids, so ties fall to the lower id.
	best := top.Sorted()
	hits := make([]Hit, len(best))
	for i, b := range best {
		hits[i] = Hit{Chunk: Chunk{ID: lx.ids[b.Doc]}, Score: b.Score, Rank: i + 1}
	}
	return hits
}
