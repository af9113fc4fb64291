package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/mergepatch"
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

// match is an item that matched a search.
type match struct {
	index    int
	distinct int // distinct terms matched
	count    int // occurrences of all terms
}

// worse orders matches from worst to best: fewer distinct terms, then
// fewer occurrences, then later in the list.
func (a match) worse(b match) bool {
	if a.distinct != b.distinct {
		return a.distinct < b.distinct
	}
	if a.count != b.count {
		return a.count < b.count
	}
	return a.index > b.index
}

// score maps a match to a number that orders like worse: the distinct terms
// are the integer part, and occurrences add a fraction below one.
func score(distinct, count int) float64 {
	return float64(distinct) + float64(count)/float64(count+1)
}

// SearchItems implements [store.Store.SearchItems] by substring matching:
// each term is looked for, case-insensitively, in the item's
// [store.SearchableText], so fragments and terms with symbols match too.
// Items rank by distinct terms matched, then by occurrences, then by index.
func (s *Store) SearchItems(ctx context.Context, id string, q store.Query) ([]store.Hit, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := s.lookup(id, store.ShapeList)
	if err != nil {
		return nil, 0, fmt.Errorf("search items: %w", err)
	}
	terms := store.Terms(q.Text)
	if len(terms) == 0 {
		return nil, 0, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}

	var counts []match
	if len(q.Fields) == 0 {
		counts, err = e.countAll(ctx, terms)
	} else {
		counts, err = countFields(ctx, e.items, terms, q.Fields)
	}
	if err != nil {
		return nil, 0, err
	}
	top := newTopK(limit, match.worse)
	total := 0
	for _, m := range counts {
		if m.distinct > 0 {
			total++
			top.push(m)
		}
	}

	best := top.sorted()
	hits := make([]store.Hit, len(best))
	for i, m := range best {
		hits[i] = store.Hit{
			Index: m.index,
			Score: score(m.distinct, m.count),
			Terms: m.distinct,
			Item:  bytes.Clone(e.items[m.index]),
		}
	}
	return hits, total, nil
}

// countAll counts the occurrences of each term in each item's searchable
// text. It searches the concatenation of all items' texts, so the cost is a
// few fast substring scans of the whole list rather than one call per item
// and term. The caller holds s.mu for reading.
func (e *entry) countAll(ctx context.Context, terms []string) ([]match, error) {
	all, starts := e.searchIndex()
	counts := make([]match, len(e.items))
	for i := range counts {
		counts[i].index = i
	}
	found := 0
	for _, term := range terms {
		item, last := 0, -1
		for from := 0; ; {
			i := strings.Index(all[from:], term)
			if i < 0 {
				break
			}
			p := from + i
			// Matches come in order, so the item holding p only moves forward.
			// Item texts end with a newline, which no term holds, so a match
			// never spans two items.
			for starts[item+1] <= p {
				item++
			}
			if item != last {
				counts[item].distinct++
				last = item
			}
			counts[item].count++
			from = p + len(term)
			if found++; found%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
	}
	return counts, nil
}

// countFields counts the occurrences of each term in the values under
// fields of each item, decoding every item.
func countFields(ctx context.Context, items []json.RawMessage, terms, fields []string) ([]match, error) {
	counts := make([]match, len(items))
	for i, it := range items {
		if i%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		text := strings.ToLower(store.SearchableText(it, fields))
		m := match{index: i}
		for _, t := range terms {
			if n := strings.Count(text, t); n > 0 {
				m.distinct++
				m.count += n
			}
		}
		counts[i] = m
	}
	return counts, nil
}

// searchIndex returns the lower-cased searchable text of every item,
// concatenated, and where each item's text starts (with the total length
// last). It builds what is missing: the per-item texts on first use, the
// concatenation after each mutation. The caller holds s.mu for reading;
// writers keep the per-item texts in step with the items.
func (e *entry) searchIndex() (string, []int) {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if !e.haveLower {
		e.lowerItems = make([]string, len(e.items))
		var sc scanner
		for i, it := range e.items {
			e.lowerItems[i] = sc.searchText(it)
		}
		e.haveLower = true
	}
	if e.lowerStarts == nil {
		n := 0
		for _, t := range e.lowerItems {
			n += len(t)
		}
		var b strings.Builder
		b.Grow(n)
		starts := make([]int, 0, len(e.lowerItems)+1)
		for _, t := range e.lowerItems {
			starts = append(starts, b.Len())
			b.WriteString(t)
		}
		e.lowerAll = b.String()
		e.lowerStarts = append(starts, b.Len())
	}
	return e.lowerAll, e.lowerStarts
}

// changed records that the list was mutated: the original bytes no longer
// describe it, and Items, Chars and Tokens follow the new content, which is
// now a JSON array. Tokens keep the producer's ratio of tokens to
// characters. The caller holds s.mu for writing.
func (e *entry) changed() {
	e.raw = nil
	e.lowerAll, e.lowerStarts = "", nil
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
		if e.haveLower {
			e.lowerItems = append(e.lowerItems, searchText(it))
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
	if e.haveLower {
		e.lowerItems[index] = searchText(item)
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
	keptText := e.lowerItems[:0]
	next := 0 // position in doomed
	for i, it := range e.items {
		if next < len(doomed) && doomed[next] == i {
			next++
			e.itemRunes -= int64(utf8.RuneCount(it))
			continue
		}
		kept = append(kept, it)
		if e.haveLower {
			keptText = append(keptText, e.lowerItems[i])
		}
	}
	// Clear the tail so that removed items can be collected.
	clear(e.items[len(kept):])
	e.items = kept
	if e.haveLower {
		clear(e.lowerItems[len(keptText):])
		e.lowerItems = keptText
	}
	e.changed()
	return nil
}
