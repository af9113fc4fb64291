package memstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// Value implements [store.Store.Value].
func (s *Store) Value(ctx context.Context, id string) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeDict)
	if err != nil {
		return nil, fmt.Errorf("value: %w", err)
	}
	return bytes.Clone(e.value), nil
}

// runeStride is how many runes apart textIndex records byte offsets, so
// finding the byte offset of any rune takes at most this many steps.
const runeStride = 4096

// textIndex is a text with the byte offset of every runeStride-th rune, so
// that a page at any rune offset is found without counting from the start.
// Invalid UTF-8 counts one rune per bad byte, as in Go's range loops.
type textIndex struct {
	s     string
	runes int64
	marks []int // marks[k] is the byte offset of rune k*runeStride
}

func newTextIndex(s string) textIndex {
	marks := make([]int, 0, len(s)/runeStride+1)
	var n int64
	for i := 0; i < len(s); n++ {
		if n%runeStride == 0 {
			marks = append(marks, i)
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return textIndex{s: s, runes: n, marks: marks}
}

// byteOffset returns the byte offset of rune r, for 0 <= r <= t.runes.
func (t *textIndex) byteOffset(r int64) int {
	if r >= t.runes {
		return len(t.s)
	}
	k := r / runeStride
	i := t.marks[k]
	for rem := r - k*runeStride; rem > 0; rem-- {
		if t.s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(t.s[i:])
		i += size
	}
	return i
}

// TextSlice implements [store.Store.TextSlice] in time proportional to the
// page, not the text. A negative offset or n is an error.
func (s *Store) TextSlice(ctx context.Context, id string, offset, n int64) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if offset < 0 || n < 0 {
		return "", fmt.Errorf("text slice of %q at %d, length %d: negative offset or length", id, offset, n)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeText)
	if err != nil {
		return "", fmt.Errorf("text slice: %w", err)
	}
	t := &e.text
	if offset >= t.runes {
		return "", nil
	}
	end := offset + min(n, t.runes-offset)
	// Clone so that a caller keeping the page does not keep the whole text.
	return strings.Clone(t.s[t.byteOffset(offset):t.byteOffset(end)]), nil
}

// passage is a passage (textsearch.Passages) as SearchText ranks it.
type passage struct {
	offset   int64 // rune offset of the first match
	length   int   // runes of the first match
	distinct int   // distinct terms matched
	count    int   // matches
}

// worse orders passages from worst to best: fewer distinct terms, then
// fewer matches, then later in the text.
func (a passage) worse(b passage) bool {
	if a.distinct != b.distinct {
		return a.distinct < b.distinct
	}
	if a.count != b.count {
		return a.count < b.count
	}
	return a.offset > b.offset
}

// searchChunkRunes is the size of the pieces SearchText matches a text in:
// it finds the pieces holding a term at once, then tokenizes those pieces
// only, to locate the matches. Small pieces mean little to tokenize for a
// rare term.
const searchChunkRunes = 1 << 9

// SearchText implements [store.Store.SearchText], matching as every
// backend does (internal/textsearch): a plain word matches the tokens whose
// stem starts with its stem, another term the folded text that holds it.
// Matches are grouped into passages (textsearch.Passages), which rank by
// distinct terms, then by matches, then by position. Memory use is bounded by the limit and the pieces, not by the
// matches.
func (s *Store) SearchText(ctx context.Context, id string, q store.TextQuery) ([]store.TextHit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	query, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		return nil, fmt.Errorf("search text of %q: %w: %w", id, store.ErrInvalidQuery, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeText)
	if err != nil {
		return nil, fmt.Errorf("search text: %w", err)
	}
	if len(query.Terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}

	// The pieces that hold each term, in order of pieces.
	type found struct{ chunk, term int }
	var where []found
	chunks, docs := e.searchChunks()
	if err := docs.Count(ctx, query, func(c, t, _ int) { where = append(where, found{c, t}) }); err != nil {
		return nil, err
	}
	slices.SortStableFunc(where, func(a, b found) int { return cmp.Compare(a.chunk, b.chunk) })
	m := textsearch.NewMatcher(query)
	top := newTopK(limit, passage.worse)
	push := func(p textsearch.Passage) {
		top.push(passage{offset: p.Offset, length: p.Runes, distinct: p.Terms.Len(), count: p.Matches})
	}
	var (
		g       textsearch.Passages
		matches []textsearch.Occurrence
	)
	for i := 0; i < len(where); {
		c := where[i].chunk
		var present textsearch.TermSet
		for ; i < len(where) && where[i].chunk == c; i++ {
			present.Add(where[i].term)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := chunks[c]
		matches = m.Locate(matches[:0], chunk.Text, &present)
		for _, o := range matches {
			if p, ok := g.Add(o, chunk.Start+int64(o.Offset)); ok {
				push(p)
			}
		}
	}
	if p, ok := g.Close(); ok {
		push(p)
	}

	best := top.sorted()
	hits := make([]store.TextHit, len(best))
	for i, p := range best {
		hits[i] = store.TextHit{
			Offset: p.offset,
			Length: p.length,
			Score:  float64(p.distinct) + float64(p.count)/float64(p.count+1),
			Terms:  p.distinct,
		}
	}
	return hits, nil
}

// searchChunks returns the text in pieces, and the pieces prepared for
// matching, building them on first use. The caller holds s.mu for reading.
func (e *entry) searchChunks() ([]textsearch.Chunk, *textsearch.Docs) {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if e.chunkDocs == nil {
		e.chunks = textsearch.Split(e.text.s, searchChunkRunes)
		docs := make([]textsearch.Doc, len(e.chunks))
		var tz textsearch.Tokenizer
		for i, c := range e.chunks {
			docs[i] = tz.NewDoc(c.Text)
		}
		e.chunkDocs = textsearch.NewDocs(docs)
	}
	return e.chunks, e.chunkDocs
}
