package sqlitestore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/sqlitebusy"
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

func (q *query) len() int { return len(q.terms) }

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

// ftsPrefix is the FTS5 expression for a plain term in the workspace whose
// termPrefix is ws: a prefix query on its stem, quoted so that words like
// AND or NEAR are not operators.
func ftsPrefix(ws string, stem []byte) string { return `"` + ws + string(stem) + `"*` }

// substringFilter returns an FTS5 expression that every text containing
// term (a term that is not a plain word) matches, or "" when the index
// cannot narrow it down. A run of word characters that symbols bound on
// both sides inside the term is a whole token of any text containing the
// term, so its index term must be there; a run at either end of the term
// may be part of a longer token, whose stem the index cannot predict.
func substringFilter(ws, term string) string {
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
		parts[i] = `"` + ws + parts[i] + `"`
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
	nterms int
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
		srch := &itemSearch{t: t, ref: ref, q: parsed.clone(), fields: q.Fields}
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
	cands  []candidate // in id order until ranked
}

func (s *itemSearch) run(limit int) ([]store.Hit, int, error) {
	q := s.q
	lo, hi := idBase(s.ref.key), idBase(s.ref.key+1)
	prefix := termPrefix(s.ref.key)
	var (
		substr []int      // terms matched by substring
		found  []termRows // rows of the plain terms
	)
	for i := range q.terms {
		if !q.plain[i] {
			substr = append(substr, i)
			continue
		}
		ids, err := ftsRowids(s.t, qMatchItems, ftsPrefix(prefix, q.stems[i]), lo, hi)
		if err != nil {
			if s.t.ctx.Err() != nil || sqlitebusy.IsBusy(err) {
				return nil, 0, err
			}
			// A word SQLite tokenizes differently can make an invalid
			// FTS query; substring matching still finds it.
			q.plain[i] = false
			substr = append(substr, i)
			continue
		}
		found = append(found, termRows{term: i, ids: ids})
	}
	s.merge(found)
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
	hits, err := s.rank(limit)
	return hits, total, err
}

// termRows are the ids of the rows that match a query term, sorted.
type termRows struct {
	term int
	ids  []int64
}

// merge adds each list's term to the candidates with the list's ids,
// adding the candidates missing; the candidates stay in id order. All the
// lists are merged in one pass, so that each candidate is written once
// however many terms there are: a broad query's lists hold tens of
// thousands of ids each.
func (s *itemSearch) merge(lists []termRows) {
	total := len(s.cands)
	for _, l := range lists {
		total += len(l.ids)
	}
	if total == len(s.cands) {
		return
	}
	out := make([]candidate, 0, total)
	pos := make([]int, len(lists)) // next id of each list
	i := 0                         // next existing candidate
	for {
		// The smallest id not merged yet, among the candidates and the
		// lists' next ids.
		id, ok := int64(0), false
		if i < len(s.cands) {
			id, ok = s.cands[i].id, true
		}
		for k, l := range lists {
			if p := pos[k]; p < len(l.ids) && (!ok || l.ids[p] < id) {
				id, ok = l.ids[p], true
			}
		}
		if !ok {
			break
		}
		if i < len(s.cands) && s.cands[i].id == id {
			out = append(out, s.cands[i])
			i++
		} else {
			out = append(out, candidate{id: id})
		}
		c := &out[len(out)-1]
		for k, l := range lists {
			if p := pos[k]; p < len(l.ids) && l.ids[p] == id {
				if !c.terms.has(l.term) {
					c.terms.add(l.term)
					c.nterms++
				}
				pos[k]++
			}
		}
	}
	s.cands = out
}

// find returns the candidate with id, or nil.
func (s *itemSearch) find(cands []candidate, id int64) *candidate {
	i, ok := slices.BinarySearchFunc(cands, id, func(c candidate, id int64) int { return cmp.Compare(c.id, id) })
	if !ok {
		return nil
	}
	return &cands[i]
}

// ftsRowids returns the rowids in [lo, hi) that match expr, in order, with
// query, one of qMatchItems and qMatchChunks. The query aggregates the
// rowids into one comma-separated list of offsets from lo: for the tens of
// thousands of rows a common word matches, that is a third faster than a
// result row each.
func ftsRowids(t *txn, query, expr string, lo, hi int64) ([]int64, error) {
	var list sql.NullString
	if err := t.queryRow(query, expr, lo, hi).Scan(&list); err != nil {
		return nil, err
	}
	if list.String == "" {
		return nil, nil
	}
	ids := make([]int64, 0, strings.Count(list.String, ",")+1)
	for f := range strings.SplitSeq(list.String, ",") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read matching rows: %w", err)
		}
		ids = append(ids, lo+n)
	}
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	return ids, nil
}

// matchSubstrings finds the items whose searchable text contains the terms
// in substr. The index narrows the items to read when every such term has a
// filter; otherwise every item of the list is read.
func (s *itemSearch) matchSubstrings(substr []int, lo, hi int64) error {
	var ids []int64
	filtered := true
	for _, i := range substr {
		expr := substringFilter(termPrefix(s.ref.key), s.q.terms[i])
		if expr == "" {
			filtered = false
			break
		}
		found, err := ftsRowids(s.t, qMatchItems, expr, lo, hi)
		if err != nil {
			if s.t.ctx.Err() != nil || sqlitebusy.IsBusy(err) {
				return err
			}
			filtered = false
			break
		}
		ids = append(ids, found...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)

	// The items are read here and matched on every core.
	type job struct {
		ids  []int64
		data [][]byte
	}
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job, 2*workers)
	found := make([][][]int64, workers) // by worker, then term
	var wg sync.WaitGroup
	for w := range workers {
		found[w] = make([][]int64, s.q.len())
		wg.Go(func() {
			var (
				scalars []byte
				sc      jsonscan.Scalars
			)
			for j := range jobs {
				for k, data := range j.data {
					var err error
					if scalars, err = sc.Append(scalars[:0], data); err != nil {
						continue
					}
					lower := lowerText(scalars)
					for _, i := range substr {
						if bytes.Contains(lower, []byte(s.q.terms[i])) {
							found[w][i] = append(found[w][i], j.ids[k])
						}
					}
				}
			}
		})
	}
	var batch job
	err := s.loadItems(ids, !filtered, func(id int64, _ int, data []byte) {
		batch.ids = append(batch.ids, id)
		batch.data = append(batch.data, data)
		if len(batch.ids) == indexBatch {
			jobs <- batch
			batch = job{}
		}
	})
	if len(batch.ids) > 0 {
		jobs <- batch
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	lists := make([]termRows, 0, len(substr))
	for _, i := range substr {
		var ids []int64
		for w := range found {
			ids = append(ids, found[w][i]...)
		}
		slices.Sort(ids)
		lists = append(lists, termRows{term: i, ids: ids})
	}
	s.merge(lists)
	return nil
}

// lowerText lowers text as strings.ToLower does, in place when it is ASCII.
func lowerText(text []byte) []byte {
	for _, c := range text {
		if c >= utf8.RuneSelf {
			return bytes.ToLower(text)
		}
	}
	for i, c := range text {
		if c >= 'A' && c <= 'Z' {
			text[i] = c + 'a' - 'A'
		}
	}
	return text
}

// loadItems calls fn for the items with the given ids (sorted), or for
// every item of the list when all is set, in any order.
func (s *itemSearch) loadItems(ids []int64, all bool, fn func(id int64, idx int, data []byte)) error {
	if !all && len(ids) == 0 {
		return nil
	}
	var rows *sql.Rows
	var err error
	if all || len(ids) > s.ref.items/4 {
		// Reading the whole range beats probing for most of it.
		rows, err = s.t.query(qItemsRange, idBase(s.ref.key), idBase(s.ref.key+1))
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
		if !all {
			if _, ok := slices.BinarySearch(ids, id); !ok {
				continue
			}
		}
		fn(id, idx, data)
	}
	return rows.Err()
}

// load fetches the data of the given candidates (sorted by id) that lack it.
func (s *itemSearch) load(cands []candidate) error {
	var ids []int64
	for _, c := range cands {
		if !c.loaded {
			ids = append(ids, c.id)
		}
	}
	return s.loadItems(ids, false, func(id int64, idx int, data []byte) {
		if c := s.find(cands, id); c != nil {
			c.idx, c.data, c.loaded = idx, data, true
		}
	})
}

// restrictToFields keeps, for every candidate, only the terms that match the
// text under the query's fields, and drops candidates left with none.
func (s *itemSearch) restrictToFields() error {
	if err := s.load(s.cands); err != nil {
		return err
	}
	m := &matcher{q: s.q}
	freq := make([]int, s.q.len())
	kept := s.cands[:0]
	for _, c := range s.cands {
		m.match(store.SearchableText(c.data, s.fields), &c.terms, freq)
		c.terms, c.nterms = termSet{}, 0
		for i, f := range freq {
			if f > 0 {
				c.terms.add(i)
				c.nterms++
			}
		}
		if c.nterms > 0 {
			kept = append(kept, c)
		}
	}
	s.cands = kept
	return nil
}

// rank orders the candidates by distinct terms, score and id (which is list
// order) and returns the first limit as hits. Only the candidates that can
// reach the first limit places are scored: those with at least as many
// terms as the one in place limit.
func (s *itemSearch) rank(limit int) ([]store.Hit, error) {
	byTerms := make([]int, s.q.len()+1)
	for _, c := range s.cands {
		byTerms[c.nterms]++
	}
	floor, seen := len(byTerms)-1, 0
	for ; floor > 1; floor-- {
		if seen += byTerms[floor]; seen >= limit {
			break
		}
	}
	contenders := s.cands[:0:0]
	for _, c := range s.cands {
		if c.nterms >= floor {
			contenders = append(contenders, c)
		}
	}

	// Document frequencies over all candidates give each term its IDF.
	docs := float64(s.ref.items)
	df := make([]int, s.q.len())
	for _, c := range s.cands {
		for i := range df {
			if c.terms.has(i) {
				df[i]++
			}
		}
	}
	idf := make([]float64, len(df))
	for i, n := range df {
		idf[i] = math.Log(1 + (docs-float64(n)+0.5)/(float64(n)+0.5))
	}

	if len(contenders) <= scoreCap {
		if err := s.load(contenders); err != nil {
			return nil, err
		}
		s.scoreBM25(contenders, idf)
	} else {
		// Too many to read: rank them on their terms' IDF alone.
		for i := range contenders {
			c := &contenders[i]
			for t := range idf {
				if c.terms.has(t) {
					c.score += idf[t]
				}
			}
		}
	}
	slices.SortFunc(contenders, func(a, b candidate) int {
		if c := cmp.Compare(b.nterms, a.nterms); c != 0 {
			return c
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	top := contenders[:min(limit, len(contenders))]
	// The hits' data, when the scoring did not need it.
	byID := slices.Clone(top)
	slices.SortFunc(byID, func(a, b candidate) int { return cmp.Compare(a.id, b.id) })
	if err := s.load(byID); err != nil {
		return nil, err
	}
	hits := make([]store.Hit, 0, len(top))
	for _, c := range top {
		if !c.loaded {
			c = *s.find(byID, c.id)
		}
		if !c.loaded {
			return nil, fmt.Errorf("item %d vanished during the search", c.id)
		}
		hits = append(hits, store.Hit{Index: c.idx, Score: c.score, Terms: c.nterms, Item: c.data})
	}
	return hits, nil
}

// scoreBM25 scores loaded candidates: for each matched term, its IDF
// weighted by its frequency in the item against the item's length. An
// item's length is its size in characters against the workspace's average,
// or, with Fields, the size of the text under them against the candidates'
// average. Items are tokenized on every core.
func (s *itemSearch) scoreBM25(cands []candidate, idf []float64) {
	lengths := make([]float64, len(cands))
	freqs := make([][]int, len(cands))
	type state struct {
		m    matcher
		freq []int
		buf  []byte
		sc   jsonscan.Scalars
	}
	parallel(len(cands), func() *state {
		return &state{m: matcher{q: s.q}, freq: make([]int, len(s.q.terms))}
	}, func(i int, st *state) {
		c := &cands[i]
		text := ""
		if len(s.fields) > 0 {
			text = store.SearchableText(c.data, s.fields)
			lengths[i] = float64(utf8.RuneCountInString(text))
		} else {
			var err error
			if st.buf, err = st.sc.Append(st.buf[:0], c.data); err == nil {
				text = string(st.buf)
			}
			lengths[i] = float64(utf8.RuneCount(c.data))
		}
		st.m.match(text, &c.terms, st.freq)
		freqs[i] = slices.Clone(st.freq)
	})
	avg := float64(s.ref.itemChars) / float64(max(s.ref.items, 1))
	if len(s.fields) > 0 {
		var total float64
		for _, l := range lengths {
			total += l
		}
		avg = total / float64(len(cands))
	}
	avg = max(avg, 1)
	for i := range cands {
		c := &cands[i]
		norm := bm25K1 * (1 - bm25B + bm25B*lengths[i]/avg)
		for t := range s.q.terms {
			if !c.terms.has(t) {
				continue
			}
			// The index matched the term, so it counts at least once.
			tf := float64(max(freqs[i][t], 1))
			c.score += idf[t] * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
}

// runeLen is the length of s in characters.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
