package rank

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/parallel"
)

// matchBatch is how many items go to a substring-matching worker at once.
const matchBatch = 256

// Source reads a list's items for a search. Ids are the store's row ids,
// which order the items as their positions do; fn gets an item's id, its
// position and its JSON.
type Source interface {
	// All calls fn for every item of the list, in any order.
	All(fn func(id int64, idx int, data []byte)) error
	// ByID calls fn for the items with the given ids (sorted), in any
	// order; it may call it for other items too.
	ByID(ids []int64, fn func(id int64, idx int, data []byte)) error
}

// List describes the list a search ranks.
type List struct {
	Items  int   // the number of items
	Chars  int64 // the characters of all the items' JSON
	Source Source
}

// Items ranks a list's items for q by distinct terms matched, then by
// BM25, then by position (textsearch.Rank), and returns the first limit
// hits and the number of items that match. Plain words are found through
// postings; other terms by substring of the folded searchable text, in the
// items postings narrow them to. BM25 uses the list's own statistics: its
// number of items, and an item's length in characters against the average
// (with fields, the length of the text under them against the average over
// the items that match).
func Items(q *textsearch.Query, fields []string, list List, postings Postings, limit int) ([]store.Hit, int, error) {
	s := &itemSearch{q: q, fields: fields, list: list, items: map[int64]loaded{}}
	return s.run(postings, limit)
}

// loaded is an item read from the list.
type loaded struct {
	idx  int
	data []byte
}

// itemSearch is the state of one Items call.
type itemSearch struct {
	q      *textsearch.Query
	fields []string
	list   List
	cands  []textsearch.Candidate // in id (Doc) order until ranked
	items  map[int64]loaded       // the items read so far, by id
	// measures holds, with fields, what ranking needs of each candidate,
	// and avgLen their average length.
	measures map[int64]textsearch.Measure
	avgLen   float64
}

func (s *itemSearch) run(postings Postings, limit int) ([]store.Hit, int, error) {
	var (
		substr []int      // terms matched by substring
		found  []termRows // rows of the plain terms
	)
	for i, term := range s.q.Terms {
		if !term.Plain {
			substr = append(substr, i)
			continue
		}
		ids, _, err := postings(i)
		if err != nil {
			return nil, 0, fmt.Errorf("look up %q: %w", term.Text, err)
		}
		found = append(found, termRows{term: i, ids: ids})
	}
	s.merge(found)
	if len(substr) > 0 {
		if err := s.matchSubstrings(substr, postings); err != nil {
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

// matchSubstrings finds the items whose searchable text, folded, contains
// the terms in substr. Postings narrow the items to read when every such
// term is known there; otherwise every item of the list is read.
func (s *itemSearch) matchSubstrings(substr []int, postings Postings) error {
	var ids []int64
	filtered := true
	for _, i := range substr {
		rows, known, err := postings(i)
		if err != nil {
			return fmt.Errorf("look up %q: %w", s.q.Terms[i].Text, err)
		}
		if !known {
			filtered = false
			break
		}
		ids = append(ids, rows...)
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
		if len(batch.ids) == matchBatch {
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
	if all {
		return s.list.Source.All(fn)
	}
	if len(ids) == 0 {
		return nil
	}
	only := func(id int64, idx int, data []byte) {
		if _, ok := slices.BinarySearch(ids, id); ok {
			fn(id, idx, data)
		}
	}
	if len(ids) > s.list.Items/4 {
		// Reading the whole list beats probing for most of it.
		return s.list.Source.All(only)
	}
	return s.list.Source.ByID(ids, only)
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
	stats := textsearch.Stats{Terms: len(s.q.Terms), Docs: s.list.Items,
		AvgLen: float64(s.list.Chars) / float64(max(s.list.Items, 1))}
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
	parallel.For(len(cands), func() *state {
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
