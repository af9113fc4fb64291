package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/mergepatch"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// scanChunk is how many items ScanItems copies per turn of the lock.
const scanChunk = 256

// checkEvery is how many items or matches a long loop handles between
// checks of its context.
const checkEvery = 4096

// Items implements [store.Store.Items]. A negative offset or limit is an
// error wrapping [store.ErrOutOfRange].
func (s *Store) Items(ctx context.Context, id string, offset, limit int) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 || limit < 0 {
		return nil, fmt.Errorf("items of %q from %d, limit %d: %w", id, offset, limit, store.ErrOutOfRange)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	if offset >= len(e.items) {
		return nil, nil
	}
	end := offset + min(limit, len(e.items)-offset)
	return cloneItems(e.items[offset:end]), nil
}

// ScanItems implements [store.Store.ScanItems]. It copies the list a chunk
// at a time and holds no lock while the caller's loop body runs.
func (s *Store) ScanItems(ctx context.Context, id string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		var e *entry
		for pos := 0; ; {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			s.mu.RLock()
			if e == nil {
				var err error
				if e, err = s.lookup(id, store.ShapeList); err != nil {
					s.mu.RUnlock()
					yield(nil, fmt.Errorf("scan items: %w", err))
					return
				}
			}
			var chunk []json.RawMessage
			if pos < len(e.items) {
				chunk = cloneItems(e.items[pos:min(pos+scanChunk, len(e.items))])
			}
			s.mu.RUnlock()
			if len(chunk) == 0 {
				return
			}
			for _, it := range chunk {
				if !yield(it, nil) {
					return
				}
			}
			pos += len(chunk)
		}
	}
}

// SearchItems implements [store.Store.SearchItems] as every backend does
// (internal/textsearch): a plain word matches the tokens whose stem starts
// with its stem, another term the folded text that holds it, and items
// rank by distinct terms matched, then by BM25 over the list's statistics
// (an item's length in characters), then by index (textsearch.Rank), as
// the SQLite store ranks them. Without fields, every item's searchable
// text is matched at once, prepared on the first search; with fields, each
// item is decoded and matched.
func (s *Store) SearchItems(ctx context.Context, id string, q store.Query) ([]store.Hit, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	query, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		return nil, 0, fmt.Errorf("search items of %q: %w: %w", id, store.ErrInvalidQuery, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return nil, 0, fmt.Errorf("search items: %w", err)
	}
	if len(query.Terms) == 0 {
		return nil, 0, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}

	var m *itemMatches
	if len(q.Fields) == 0 {
		m, err = e.matchAll(ctx, query)
	} else {
		m, err = matchFields(ctx, e.items, query, q.Fields)
	}
	if err != nil {
		return nil, 0, err
	}
	total := len(m.cands)
	stats := textsearch.Stats{Terms: len(query.Terms), Docs: len(e.items), AvgLen: m.avgLen}
	top, err := textsearch.Rank(m.cands, stats, limit, m.measure)
	if err != nil {
		return nil, 0, err
	}
	hits := make([]store.Hit, len(top))
	for i, c := range top {
		hits[i] = store.Hit{
			Index: int(c.Doc),
			Score: c.Score,
			Terms: c.Terms.Len(),
			Item:  bytes.Clone(e.items[c.Doc]),
		}
	}
	return hits, total, nil
}

// itemMatches are the items a search matched (Doc is the index), with
// what ranking needs to know of each.
type itemMatches struct {
	cands  []textsearch.Candidate
	at     []int32 // by item: 1 + its candidate's position, 0 for none
	terms  int
	freq   []int     // by candidate position, then term
	length []float64 // by candidate position; nil: the item's characters
	items  []json.RawMessage
	avgLen float64
}

// add records that item i matched term t n times.
func (m *itemMatches) add(i, t, n int) {
	p := m.at[i]
	if p == 0 {
		m.cands = append(m.cands, textsearch.Candidate{Doc: int64(i)})
		for range m.terms {
			m.freq = append(m.freq, 0)
		}
		p = int32(len(m.cands))
		m.at[i] = p
	}
	m.cands[p-1].Terms.Add(t)
	m.freq[int(p-1)*m.terms+t] = n
}

// measure gives textsearch.Rank the length and term frequencies of the
// contenders.
func (m *itemMatches) measure(cands []textsearch.Candidate) ([]textsearch.Measure, error) {
	out := make([]textsearch.Measure, len(cands))
	for i, c := range cands {
		p := int(m.at[c.Doc] - 1)
		out[i].Freq = m.freq[p*m.terms : (p+1)*m.terms]
		if m.length != nil {
			out[i].Len = m.length[p]
		} else {
			out[i].Len = float64(utf8.RuneCount(m.items[c.Doc]))
		}
	}
	return out, nil
}

// matchAll matches the searchable text of every item. The caller holds
// s.mu for reading.
func (e *entry) matchAll(ctx context.Context, q *textsearch.Query) (*itemMatches, error) {
	docs := e.searchDocs()
	m := &itemMatches{at: make([]int32, len(e.items)), terms: len(q.Terms), items: e.items,
		avgLen: float64(e.itemRunes) / float64(max(len(e.items), 1))}
	if err := docs.Count(ctx, q, m.add); err != nil {
		return nil, err
	}
	return m, nil
}

// matchFields matches the values under fields of each item, decoding
// every item.
func matchFields(ctx context.Context, items []json.RawMessage, q *textsearch.Query, fields []string) (*itemMatches, error) {
	m := &itemMatches{at: make([]int32, len(items)), terms: len(q.Terms), length: []float64{}}
	mt := textsearch.NewMatcher(q)
	var every textsearch.TermSet
	for t := range q.Terms {
		every.Add(t)
	}
	freq := make([]int, len(q.Terms))
	var total float64
	for i, it := range items {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		text := store.SearchableText(it, fields)
		mt.Count(text, &every, freq)
		matched := false
		for t, n := range freq {
			if n > 0 {
				m.add(i, t, n)
				matched = true
			}
		}
		if matched {
			n := float64(utf8.RuneCountInString(text))
			m.length = append(m.length, n)
			total += n
		}
	}
	m.avgLen = total / float64(max(len(m.cands), 1))
	return m, nil
}

// searchDocs returns the searchable text of every item, prepared for
// matching (textsearch.Docs). It builds what is missing: the prepared text
// of each item on first use, their concatenation after each mutation. The
// caller holds s.mu for reading; writers keep the prepared texts in step
// with the items.
func (e *entry) searchDocs() *textsearch.Docs {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if !e.haveDocs {
		e.docs = make([]textsearch.Doc, len(e.items))
		var sc scanner
		var tz textsearch.Tokenizer
		for i, it := range e.items {
			e.docs[i] = tz.NewDoc(sc.searchText(it))
		}
		e.haveDocs = true
	}
	if e.joined == nil {
		e.joined = textsearch.NewDocs(e.docs)
		// The items' prepared texts now share the joined memory.
		for i := range e.docs {
			e.docs[i] = e.joined.Doc(i)
		}
	}
	return e.joined
}

// prepare returns item's searchable text prepared for matching.
func prepare(item json.RawMessage) textsearch.Doc {
	var tz textsearch.Tokenizer
	return tz.NewDoc(searchText(item))
}

// changed records that the list was mutated: the original bytes no longer
// describe it, and Items, Chars and Tokens follow the new content, which is
// now a JSON array. Tokens keep the producer's ratio of tokens to
// characters. The caller holds s.mu for writing.
func (e *entry) changed() {
	e.raw = nil
	e.joined = nil
	n := len(e.items)
	chars := e.itemRunes + 2 + int64(max(n-1, 0))
	e.ws.Items = n
	e.ws.Chars = chars
	e.ws.Tokens = int(math.Round(float64(chars) * e.tokensPerChar))
}

// checkItems returns an error unless every item is valid JSON.
func checkItems(items []json.RawMessage) error {
	for i, it := range items {
		if !jsonscan.Valid(it) {
			return fmt.Errorf("item %d is not valid JSON", i)
		}
	}
	return nil
}

// AppendItems implements [store.Store.AppendItems].
func (s *Store) AppendItems(ctx context.Context, id string, items []json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkItems(items); err != nil {
		return fmt.Errorf("append to %q: %w", id, err)
	}
	items = cloneItems(items)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return fmt.Errorf("append items: %w", err)
	}
	if len(items) == 0 {
		return nil
	}
	e.items = append(e.items, items...)
	for _, it := range items {
		e.itemRunes += int64(utf8.RuneCount(it))
		if e.haveDocs {
			e.docs = append(e.docs, prepare(it))
		}
	}
	e.changed()
	return nil
}

// UpdateItem implements [store.Store.UpdateItem].
func (s *Store) UpdateItem(ctx context.Context, id string, index int, item json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !jsonscan.Valid(item) {
		return fmt.Errorf("update item %d of %q: item is not valid JSON", index, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return fmt.Errorf("update item: %w", err)
	}
	if index < 0 || index >= len(e.items) {
		return fmt.Errorf("update item %d of %q (%d items): %w", index, id, len(e.items), store.ErrOutOfRange)
	}
	e.replace(index, bytes.Clone(item))
	return nil
}

// replace sets the item at index. The caller holds s.mu for writing.
func (e *entry) replace(index int, item json.RawMessage) {
	e.itemRunes += int64(utf8.RuneCount(item)) - int64(utf8.RuneCount(e.items[index]))
	e.items[index] = item
	if e.haveDocs {
		e.docs[index] = prepare(item)
	}
	e.changed()
}

// PatchItem implements [store.Store.PatchItem] with package
// internal/mergepatch. The patch must be a JSON object, and so must the
// item.
func (s *Store) PatchItem(ctx context.Context, id string, index int, patch json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := mergepatch.Parse(patch)
	if err != nil {
		return fmt.Errorf("patch item %d of %q: %w", index, id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return fmt.Errorf("patch item: %w", err)
	}
	if index < 0 || index >= len(e.items) {
		return fmt.Errorf("patch item %d of %q (%d items): %w", index, id, len(e.items), store.ErrOutOfRange)
	}
	merged, err := p.Apply(e.items[index])
	if err != nil {
		return fmt.Errorf("patch item %d of %q: %w", index, id, err)
	}
	e.replace(index, merged)
	return nil
}

// DeleteItems implements [store.Store.DeleteItems]. It checks every index
// before removing any.
func (s *Store) DeleteItems(ctx context.Context, id string, indexes []int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return fmt.Errorf("delete items: %w", err)
	}
	if len(indexes) == 0 {
		return nil
	}
	for _, i := range indexes {
		if i < 0 || i >= len(e.items) {
			return fmt.Errorf("delete item %d of %q (%d items): %w", i, id, len(e.items), store.ErrOutOfRange)
		}
	}
	doomed := slices.Clone(indexes)
	slices.Sort(doomed)
	doomed = slices.Compact(doomed)

	kept := e.items[:0]
	keptDocs := e.docs[:0]
	next := 0 // position in doomed
	for i, it := range e.items {
		if next < len(doomed) && doomed[next] == i {
			next++
			e.itemRunes -= int64(utf8.RuneCount(it))
			continue
		}
		kept = append(kept, it)
		if e.haveDocs {
			keptDocs = append(keptDocs, e.docs[i])
		}
	}
	// Clear the tail so that removed items can be collected.
	clear(e.items[len(kept):])
	e.items = kept
	if e.haveDocs {
		clear(e.docs[len(keptDocs):])
		e.docs = keptDocs
	}
	e.changed()
	return nil
}
