package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// Search bounds. A query is hostile input: it may hold any number of terms.
const (
	maxTerms     = 256
	defaultLimit = 10
	maxLimit     = 10000
	// scoreCap bounds how many items SearchItems reads and tokenizes to
	// compute BM25; past it, items tie on their terms' IDF alone and the
	// earlier index wins.
	scoreCap = 5000
)

// BM25 parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// termSet is a set of query term numbers.
type termSet [maxTerms / 64]uint64

func (s *termSet) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s *termSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s *termSet) count() (n int) {
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// query is a parsed search: its terms, and for each whether it goes
// through the full-text index (plain words) or substring matching.
type query struct {
	terms []string
	plain []bool
	stems [][]byte // stemmed plain terms, for matching in Go
}

// clone copies q, whose plain flags a search may clear.
func (q *query) clone() *query {
	c := *q
	c.plain = slices.Clone(q.plain)
	return &c
}

// searchIndexed runs a search in a read transaction; when the search finds
// the workspace not indexed yet, it indexes it and runs the search again.
func (s *Store) searchIndexed(ctx context.Context, id string, search func(t *txn) error) error {
	err := s.read(ctx, search)
	if !errors.Is(err, errNotIndexed) {
		return err
	}
	if err := s.ensureIndexed(ctx, id); err != nil {
		return err
	}
	return s.read(ctx, search)
}

func parseQuery(text string) (*query, error) {
	terms := store.Terms(text)
	if len(terms) > maxTerms {
		return nil, fmt.Errorf("query has %d terms, more than %d", len(terms), maxTerms)
	}
	q := &query{terms: terms, plain: make([]bool, len(terms)), stems: make([][]byte, len(terms))}
	for i, t := range terms {
		if store.PlainWord(t) {
			q.plain[i] = true
			q.stems[i] = queryStem(t)
		}
	}
	return q, nil
}

// ftsPrefix is the FTS5 expression for a plain term: a prefix query on its
// stem, quoted so that words like AND or NEAR are not operators.
func ftsPrefix(stem []byte) string { return `"` + string(stem) + `"*` }

// substringFilter returns an FTS5 expression that every text containing
// term (a term that is not a plain word) matches, or "" when the index
// cannot narrow it down. A run of word characters that symbols bound on
// both sides inside the term is a whole token of any text containing the
// term, so its index term must be there; a run at either end of the term
// may be part of a longer token, whose stem the index cannot predict.
func substringFilter(term string) string {
	var parts []string
	start, inRun := 0, false
	for i, r := range term {
		word := isTokenRune(r) || inRun && isDiacritic(r)
		switch {
		case word && !inRun:
			start, inRun = i, true
		case !word && inRun:
			if start > 0 {
				stem := string(queryStem(term[start:i]))
				if !slices.Contains(parts, stem) {
					parts = append(parts, stem)
				}
			}
			inRun = false
		}
	}
	for i := range parts {
		parts[i] = `"` + parts[i] + `"`
	}
	return strings.Join(parts, " AND ")
}

// matcher finds query terms in text the way the index and substring
// matching do.
type matcher struct {
	q       *query
	scratch []byte
}

// match reports, for each term, how often it occurs in text (0 when it
// does not), into freq, and returns the number of tokens of text. Terms not
// in want are skipped.
func (m *matcher) match(text string, want *termSet, freq []int) int {
	clear(freq)
	anyPlain := false
	for i := range m.q.terms {
		if m.q.plain[i] && want.has(i) {
			anyPlain = true
		}
	}
	tokens := 0
	tokenize(text, func(t *token) bool {
		tokens++
		if anyPlain {
			for i, stem := range m.q.stems {
				if m.q.plain[i] && want.has(i) && stemMatches(t.folded, stem, m.scratch) {
					freq[i]++
				}
			}
		}
		return true
	})
	var lower string
	for i, term := range m.q.terms {
		if m.q.plain[i] || !want.has(i) {
			continue
		}
		if lower == "" {
			lower = strings.ToLower(text)
		}
		freq[i] = strings.Count(lower, term)
	}
	return tokens
}

// candidate is an item that matched at least one term.
type candidate struct {
	id     int64
	terms  termSet
	idx    int
	data   []byte
	loaded bool
	score  float64
}

// SearchItems ranks items by distinct terms matched, then by BM25, then by
// index. Plain words are found through the full-text index (stemmed prefix
// match); other terms by substring. BM25 uses the workspace's own statistics,
// so a large workspace elsewhere does not skew a small one's ranking.
func (s *Store) SearchItems(ctx context.Context, id string, q store.Query) ([]store.Hit, int, error) {
	parsed, err := parseQuery(q.Text)
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", id, err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	var (
		hits  []store.Hit
		total int
	)
	err = s.searchIndexed(ctx, id, func(t *txn) error {
		hits, total = nil, 0
		ref, err := lookup(t, id, store.ShapeList)
		if err != nil {
			return err
		}
		if len(parsed.terms) == 0 || ref.items == 0 {
			return nil
		}
		if !ref.indexed {
			return errNotIndexed
		}
		srch := &itemSearch{t: t, ref: ref, q: parsed.clone(), fields: q.Fields, byID: map[int64]int{}}
		hits, total, err = srch.run(limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", id, err)
	}
	return hits, total, nil
}

// itemSearch is the state of one SearchItems call.
type itemSearch struct {
	t      *txn
	ref    *wsRef
	q      *query
	fields []string
	cands  []candidate
	byID   map[int64]int
}

func (s *itemSearch) cand(id int64) *candidate {
	i, ok := s.byID[id]
	if !ok {
		i = len(s.cands)
		s.byID[id] = i
		s.cands = append(s.cands, candidate{id: id})
	}
	return &s.cands[i]
}

func (s *itemSearch) run(limit int) ([]store.Hit, int, error) {
	q := s.q
	lo, hi := idBase(s.ref.key), idBase(s.ref.key+1)
	var substr []int // terms matched by substring
	for i := range q.terms {
		if !q.plain[i] {
			substr = append(substr, i)
			continue
		}
		ids, err := ftsRowids(s.t, qMatchItems, ftsPrefix(q.stems[i]), lo, hi)
		if err != nil {
			if s.t.ctx.Err() != nil || isBusy(err) {
				return nil, 0, err
			}
			// A word SQLite tokenizes differently (say, letters newer than
			// its Unicode tables) can make an invalid FTS query; substring
			// matching still finds it.
			q.plain[i] = false
			substr = append(substr, i)
			continue
		}
		for _, id := range ids {
			s.cand(id).terms.add(i)
		}
	}
	if len(substr) > 0 {
		if err := s.matchSubstrings(substr, lo, hi); err != nil {
			return nil, 0, err
		}
	}
	if len(s.fields) > 0 {
		if err := s.restrictToFields(); err != nil {
			return nil, 0, err
		}
	}
	total := len(s.cands)
	if total == 0 {
		return nil, 0, nil
	}
	return s.rank(limit), total, nil
}

// ftsRowids returns the rowids in [lo, hi) that match expr, with query, one
// of qMatchItems and qMatchChunks.
func ftsRowids(t *txn, query, expr string, lo, hi int64) ([]int64, error) {
	rows, err := t.query(query, expr, lo, hi)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// matchSubstrings finds the items whose searchable text contains the terms
// in substr. The index narrows the items to read when every such term has a
// filter; otherwise every item of the list is read.
func (s *itemSearch) matchSubstrings(substr []int, lo, hi int64) error {
	var ids []int64
	filtered := true
	seen := map[int64]bool{}
	for _, i := range substr {
		expr := substringFilter(s.q.terms[i])
		if expr == "" {
			filtered = false
			break
		}
		found, err := ftsRowids(s.t, qMatchItems, expr, lo, hi)
		if err != nil {
			if s.t.ctx.Err() != nil || isBusy(err) {
				return err
			}
			filtered = false
			break
		}
		for _, id := range found {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	var buf []byte
	return s.loadItems(ids, !filtered, false, func(id int64, idx int, data []byte) {
		var err error
		buf, err = appendScalars(buf[:0], data, true)
		if err != nil {
			return
		}
		lower := strings.ToLower(string(buf))
		for _, i := range substr {
			if strings.Contains(lower, s.q.terms[i]) {
				s.cand(id).terms.add(i)
			}
		}
	})
}

// loadItems calls fn for the items with the given ids, or for every item
// of the list when all is set. With keep, the data is kept on the
// candidates, which must exist.
func (s *itemSearch) loadItems(ids []int64, all, keep bool, fn func(id int64, idx int, data []byte)) error {
	if !all && len(ids) == 0 {
		return nil
	}
	lo, hi := idBase(s.ref.key), idBase(s.ref.key+1)
	var rows *sql.Rows
	var err error
	var want map[int64]bool
	if all || len(ids) > s.ref.items/4 {
		// Reading the whole range beats probing for most of it.
		if !all {
			want = make(map[int64]bool, len(ids))
			for _, id := range ids {
				want[id] = true
			}
		}
		rows, err = s.t.query(qItemsRange, lo, hi)
	} else {
		list, jerr := json.Marshal(ids)
		if jerr != nil {
			return jerr
		}
		rows, err = s.t.query(qItemsByID, string(list))
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var idx int
		var data []byte
		if err := rows.Scan(&id, &idx, &data); err != nil {
			return err
		}
		if want != nil && !want[id] {
			continue
		}
		if keep {
			c := s.cand(id)
			c.idx, c.data, c.loaded = idx, data, true
		}
		fn(id, idx, data)
	}
	return rows.Err()
}

// restrictToFields keeps, for every candidate, only the terms that match the
// text under the query's fields, and drops candidates left with none.
func (s *itemSearch) restrictToFields() error {
	ids := make([]int64, len(s.cands))
	for i, c := range s.cands {
		ids[i] = c.id
	}
	m := &matcher{q: s.q}
	freq := make([]int, len(s.q.terms))
	err := s.loadItems(ids, false, true, func(id int64, _ int, data []byte) {
		c := s.cand(id)
		text := store.SearchableText(data, s.fields)
		m.match(text, &c.terms, freq)
		var kept termSet
		for i, f := range freq {
			if f > 0 {
				kept.add(i)
			}
		}
		c.terms = kept
	})
	if err != nil {
		return err
	}
	kept := s.cands[:0]
	for _, c := range s.cands {
		if c.terms.count() > 0 {
			kept = append(kept, c)
		}
	}
	s.cands = kept
	clear(s.byID)
	for i, c := range s.cands {
		s.byID[c.id] = i
	}
	return nil
}

// rank orders the candidates by distinct terms, BM25 and id (which is list
// order) and returns the first limit as hits. Only the candidates that can
// reach the first limit places are scored.
func (s *itemSearch) rank(limit int) []store.Hit {
	cands := s.cands
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := cmp.Compare(b.terms.count(), a.terms.count()); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	clear(s.byID)
	for i, c := range cands {
		s.byID[c.id] = i
	}
	// Every candidate with as many terms as the last one that can place.
	floor := cands[min(limit, len(cands))-1].terms.count()
	n := len(cands)
	for i, c := range cands {
		if c.terms.count() < floor {
			n = i
			break
		}
	}
	contenders := cands[:n]

	// Document frequencies over all candidates give each term its IDF.
	docs := float64(s.ref.items)
	idf := make([]float64, len(s.q.terms))
	for i := range s.q.terms {
		df := 0
		for _, c := range cands {
			if c.terms.has(i) {
				df++
			}
		}
		idf[i] = math.Log(1 + (docs-float64(df)+0.5)/(float64(df)+0.5))
	}

	scored := len(contenders) <= scoreCap
	if scored {
		var missing []int64
		for _, c := range contenders {
			if !c.loaded {
				missing = append(missing, c.id)
			}
		}
		if err := s.loadItems(missing, false, true, func(int64, int, []byte) {}); err != nil {
			scored = false
		}
	}
	if scored {
		s.scoreBM25(contenders, idf)
	} else {
		for i := range contenders {
			c := &contenders[i]
			for t := range s.q.terms {
				if c.terms.has(t) {
					c.score += idf[t]
				}
			}
		}
	}
	slices.SortFunc(contenders, func(a, b candidate) int {
		if c := cmp.Compare(b.terms.count(), a.terms.count()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	top := contenders[:min(limit, len(contenders))]
	hits := make([]store.Hit, 0, len(top))
	for _, c := range top {
		hits = append(hits, store.Hit{Index: c.idx, Score: c.score, Terms: c.terms.count(), Item: c.data})
	}
	return hits
}

// scoreBM25 scores loaded candidates: for each matched term, its IDF
// weighted by its frequency in the item against the item's length.
func (s *itemSearch) scoreBM25(cands []candidate, idf []float64) {
	m := &matcher{q: s.q}
	freq := make([]int, len(s.q.terms))
	lengths := make([]int, len(cands))
	freqs := make([][]int, len(cands))
	total := 0
	var buf []byte
	for i := range cands {
		c := &cands[i]
		var text string
		if len(s.fields) > 0 {
			text = store.SearchableText(c.data, s.fields)
		} else {
			var err error
			if buf, err = appendScalars(buf[:0], c.data, true); err != nil {
				continue
			}
			text = string(buf)
		}
		lengths[i] = max(m.match(text, &c.terms, freq), 1)
		freqs[i] = slices.Clone(freq)
		total += lengths[i]
	}
	avg := float64(total) / float64(len(cands))
	for i := range cands {
		c := &cands[i]
		norm := bm25K1 * (1 - bm25B + bm25B*float64(lengths[i])/avg)
		for t := range s.q.terms {
			if !c.terms.has(t) {
				continue
			}
			// The index may match a token the Go tokenizer reads
			// differently; a matched term counts at least once.
			tf := 1.0
			if freqs[i] != nil && freqs[i][t] > 0 {
				tf = float64(freqs[i][t])
			}
			c.score += idf[t] * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
}

// runeLen is the length of s in characters.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
