package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// Search bounds.
const (
	defaultLimit = 10
	maxLimit     = 10000
)

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

// ftsPrefix is the FTS5 expression for a plain term in the workspace whose
// termPrefix is ws: a prefix query on its stem, quoted so that words like
// AND or NEAR are not operators.
func ftsPrefix(ws, stem string) string { return `"` + ws + stem + `"*` }

// substringFilter returns an FTS5 expression that every text containing
// term (a term that is not a plain word) matches, or "" when the index
// cannot narrow it down: all the index terms every such text holds
// (textsearch.InnerTerms).
func substringFilter(ws, term string) string {
	parts := textsearch.InnerTerms(term)
	for i := range parts {
		parts[i] = `"` + ws + parts[i] + `"`
	}
	return strings.Join(parts, " AND ")
}

// SearchItems ranks items by distinct terms matched, then by BM25, then by
// index (textsearch.Rank). Plain words are found through the full-text
// index (stemmed prefix match); other terms by substring. BM25 uses the
// workspace's own statistics, so a large workspace elsewhere does not skew
// a small one's ranking: its number of items, and an item's length in
// characters against the average (with Fields, the length of the text under
// them against the average over the items that match).
func (s *Store) SearchItems(ctx context.Context, id string, q store.Query) ([]store.Hit, int, error) {
	parsed, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w: %w", id, store.ErrInvalidQuery, err)
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
		if len(parsed.Terms) == 0 || ref.items == 0 {
			return nil
		}
		if !ref.indexed {
			return errNotIndexed
		}
		srch := &itemSearch{t: t, ref: ref, q: parsed, fields: q.Fields, items: map[int64]loaded{}}
		hits, total, err = srch.run(limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", id, err)
	}
	return hits, total, nil
}

// loaded is an item read from the list.
type loaded struct {
	idx  int
	data []byte
}

// itemSearch is the state of one SearchItems call.
type itemSearch struct {
	t      *txn
	ref    *wsRef
	q      *textsearch.Query
	fields []string
	cands  []textsearch.Candidate // in id (Doc) order until ranked
	items  map[int64]loaded       // the items read so far, by id
	// measures holds, with Fields, what ranking needs of each candidate,
	// and avgLen their average length.
	measures map[int64]textsearch.Measure
	avgLen   float64
}

func (s *itemSearch) run(limit int) ([]store.Hit, int, error) {
	q := s.q
	lo, hi := idBase(s.ref.key), idBase(s.ref.key+1)
	prefix := termPrefix(s.ref.key)
	var (
		substr []int      // terms matched by substring
		found  []termRows // rows of the plain terms
	)
	for i, term := range q.Terms {
		if !term.Plain {
			substr = append(substr, i)
			continue
		}
		ids, err := ftsRowids(s.t, qMatchItems, ftsPrefix(prefix, term.Stem), lo, hi)
		if err != nil {
			return nil, 0, fmt.Errorf("look up %q: %w", term.Text, err)
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
	out := make([]textsearch.Candidate, 0, total)
	pos := make([]int, len(lists)) // next id of each list
	i := 0                         // next existing candidate
	for {
		// The smallest id not merged yet, among the candidates and the
		// lists' next ids.
		id, ok := int64(0), false
		if i < len(s.cands) {
			id, ok = s.cands[i].Doc, true
		}
		for k, l := range lists {
			if p := pos[k]; p < len(l.ids) && (!ok || l.ids[p] < id) {
				id, ok = l.ids[p], true
			}
		}
		if !ok {
			break
		}
		if i < len(s.cands) && s.cands[i].Doc == id {
			out = append(out, s.cands[i])
			i++
		} else {
			out = append(out, textsearch.Candidate{Doc: id})
		}
		c := &out[len(out)-1]
		for k, l := range lists {
			if p := pos[k]; p < len(l.ids) && l.ids[p] == id {
				c.Terms.Add(l.term)
				pos[k]++
			}
		}
	}
	s.cands = out
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

// matchSubstrings finds the items whose searchable text, folded, contains
// the terms in substr. The index narrows the items to read when every such
// term has a filter; otherwise every item of the list is read.
func (s *itemSearch) matchSubstrings(substr []int, lo, hi int64) error {
	var ids []int64
	filtered := true
	for _, i := range substr {
		expr := substringFilter(termPrefix(s.ref.key), s.q.Terms[i].Text)
		if expr == "" {
			filtered = false
			break
		}
		found, err := ftsRowids(s.t, qMatchItems, expr, lo, hi)
		if err != nil {
			if s.t.ctx.Err() != nil || sqlitedb.IsBusy(err) {
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
		found[w] = make([][]int64, len(s.q.Terms))
		wg.Go(func() {
			var (
				scalars, folded []byte
				sc              jsonscan.Scalars
			)
			for j := range jobs {
				for k, data := range j.data {
					var err error
					if scalars, err = sc.Append(scalars[:0], data); err != nil {
						continue
					}
					folded = textsearch.AppendFold(folded[:0], string(scalars))
					for _, i := range substr {
						if bytes.Contains(folded, []byte(s.q.Terms[i].Text)) {
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

// load reads the items of the given candidates that are not read yet.
func (s *itemSearch) load(cands []textsearch.Candidate) error {
	var ids []int64
	for _, c := range cands {
		if _, ok := s.items[c.Doc]; !ok {
			ids = append(ids, c.Doc)
		}
	}
	slices.Sort(ids)
	return s.loadItems(ids, false, func(id int64, idx int, data []byte) {
		s.items[id] = loaded{idx: idx, data: data}
	})
}

// restrictToFields keeps, for every candidate, only the terms that match
// the text under the query's fields, and drops candidates left with none.
// It measures the candidates kept for ranking on the way.
func (s *itemSearch) restrictToFields() error {
	if err := s.load(s.cands); err != nil {
		return err
	}
	m := textsearch.NewMatcher(s.q)
	freq := make([]int, len(s.q.Terms))
	s.measures = map[int64]textsearch.Measure{}
	var total float64
	kept := s.cands[:0]
	for _, c := range s.cands {
		text := store.SearchableText(s.items[c.Doc].data, s.fields)
		m.Count(text, &c.Terms, freq)
		c.Terms = textsearch.TermSet{}
		for i, f := range freq {
			if f > 0 {
				c.Terms.Add(i)
			}
		}
		if c.Terms.Len() > 0 {
			kept = append(kept, c)
			n := float64(utf8.RuneCountInString(text))
			s.measures[c.Doc] = textsearch.Measure{Len: n, Freq: slices.Clone(freq)}
			total += n
		}
	}
	s.cands = kept
	s.avgLen = total / float64(max(len(kept), 1))
	return nil
}

// rank orders the candidates (textsearch.Rank) and returns the first limit
// as hits.
func (s *itemSearch) rank(limit int) ([]store.Hit, error) {
	stats := textsearch.Stats{Terms: len(s.q.Terms), Docs: s.ref.items,
		AvgLen: float64(s.ref.itemChars) / float64(max(s.ref.items, 1))}
	if s.measures != nil {
		stats.AvgLen = s.avgLen
	}
	top, err := textsearch.Rank(s.cands, stats, limit, s.measure)
	if err != nil {
		return nil, err
	}
	// The hits' data, when the scoring did not need it.
	if err := s.load(top); err != nil {
		return nil, err
	}
	hits := make([]store.Hit, 0, len(top))
	for _, c := range top {
		it, ok := s.items[c.Doc]
		if !ok {
			return nil, fmt.Errorf("item %d vanished during the search", c.Doc)
		}
		hits = append(hits, store.Hit{Index: it.idx, Score: c.Score, Terms: c.Terms.Len(), Item: it.data})
	}
	return hits, nil
}

// measure gives the length and term frequencies of the candidates ranking
// scores: the characters of the item and the matches in its searchable
// text, or what restrictToFields found under the query's fields. Items are
// read, then matched on every core.
func (s *itemSearch) measure(cands []textsearch.Candidate) ([]textsearch.Measure, error) {
	out := make([]textsearch.Measure, len(cands))
	if s.measures != nil {
		for i, c := range cands {
			out[i] = s.measures[c.Doc]
		}
		return out, nil
	}
	if err := s.load(cands); err != nil {
		return nil, err
	}
	type state struct {
		m    *textsearch.Matcher
		freq []int
		buf  []byte
		sc   jsonscan.Scalars
	}
	parallel(len(cands), func() *state {
		return &state{m: textsearch.NewMatcher(s.q), freq: make([]int, len(s.q.Terms))}
	}, func(i int, st *state) {
		c := &cands[i]
		data := s.items[c.Doc].data
		text := ""
		var err error
		if st.buf, err = st.sc.Append(st.buf[:0], data); err == nil {
			text = string(st.buf)
		}
		st.m.Count(text, &c.Terms, st.freq)
		out[i] = textsearch.Measure{Len: float64(utf8.RuneCount(data)), Freq: slices.Clone(st.freq)}
	})
	return out, nil
}
