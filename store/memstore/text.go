package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

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

// runeOffset returns the rune offset of byte offset p, given that byte
// offset known is rune knownRune and known <= p. It counts from whichever is
// nearer, known or the index mark before p, so a search with a few matches
// in a large text does not count every rune between them.
func (t *textIndex) runeOffset(p, known int, knownRune int64) int64 {
	k := sort.SearchInts(t.marks, p+1) - 1
	if mark := t.marks[k]; mark > known {
		return int64(k)*runeStride + int64(utf8.RuneCountInString(t.s[mark:p]))
	}
	return knownRune + int64(utf8.RuneCountInString(t.s[known:p]))
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

// passageWindow is how many runes after a passage's first match further
// matches still count toward that passage.
const passageWindow = 200

// passage is a run of matches close together in a text.
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

// cursor walks the occurrences of one term.
type cursor struct {
	term  string
	runes int
	pos   int // byte offset of the next occurrence; -1 when there is none
}

// SearchText implements [store.Store.SearchText]. It finds every
// case-insensitive occurrence of every term, in text order, and groups
// occurrences within passageWindow runes of a passage's first one into
// that passage. Passages rank by distinct terms, then by occurrences, then
// by position. Memory use is bounded by the limit, not by the matches.
func (s *Store) SearchText(ctx context.Context, id string, q store.TextQuery) ([]store.TextHit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeText)
	if err != nil {
		return nil, fmt.Errorf("search text: %w", err)
	}
	terms := store.Terms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}

	lower := e.lowered()
	cursors := make([]cursor, len(terms))
	for i, t := range terms {
		cursors[i] = cursor{term: t, runes: utf8.RuneCountInString(t), pos: strings.Index(lower, t)}
	}
	top := newTopK(limit, passage.worse)
	// seen[i] is the number of the last passage in which term i matched.
	seen := make([]int, len(terms))
	var (
		cur      passage
		number   int // of cur; 0 before the first match
		lastByte int
		lastRune int64
	)
	for step := 0; ; step++ {
		if step%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		next := -1
		for i := range cursors {
			if p := cursors[i].pos; p >= 0 && (next < 0 || p < cursors[next].pos) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		c := &cursors[next]
		lastRune = e.text.runeOffset(c.pos, lastByte, lastRune)
		lastByte = c.pos
		if number == 0 || lastRune-cur.offset > passageWindow {
			if number > 0 {
				top.push(cur)
			}
			number++
			cur = passage{offset: lastRune, length: c.runes}
		}
		cur.count++
		if seen[next] != number {
			seen[next] = number
			cur.distinct++
		}
		from := c.pos + len(c.term)
		if i := strings.Index(lower[from:], c.term); i >= 0 {
			c.pos = from + i
		} else {
			c.pos = -1
		}
	}
	if number > 0 {
		top.push(cur)
	}

	best := top.sorted()
	hits := make([]store.TextHit, len(best))
	for i, p := range best {
		hits[i] = store.TextHit{
			Offset: p.offset,
			Length: p.length,
			Score:  score(p.distinct, p.count),
			Terms:  p.distinct,
		}
	}
	return hits, nil
}

// lowered returns the text lower-cased rune by rune with every byte offset
// unchanged, building it on first use. The caller holds s.mu for reading.
func (e *entry) lowered() string {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if !e.haveText {
		e.lowerText = lowerKeepingOffsets(e.text.s)
		e.haveText = true
	}
	return e.lowerText
}

// lowerKeepingOffsets lower-cases s, leaving alone the rare runes whose
// lower case has another UTF-8 length (such as the Kelvin sign), so that
// offsets into the result are offsets into s. It returns s itself when
// nothing changes, which costs no memory.
func lowerKeepingOffsets(s string) string {
	var b strings.Builder
	copied := 0 // s[:copied] is in b
	flush := func(i int) {
		if b.Cap() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[copied:i])
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				flush(i)
				b.WriteByte(c + 'a' - 'A')
				copied = i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); l != r && utf8.RuneLen(l) == size {
			flush(i)
			b.WriteRune(l)
			copied = i + size
		}
		i += size
	}
	if copied == 0 {
		return s
	}
	flush(len(s))
	return b.String()
}
