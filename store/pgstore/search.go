package pgstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
)

// Search bounds, as in sqlitestore.
const (
	defaultLimit = 10
	maxLimit     = 10000
	// loadBatch is how many items go to a matching worker at once.
	loadBatch = 256
	// chunkBatch is how many chunks SearchText reads at once.
	chunkBatch = 8
)

// termTable is a table of index terms: ws_item_terms (rows are items, by
// seq) or ws_chunk_terms (rows are chunks, by chunk).
type termTable struct{ table, row string }

var (
	itemTerms  = termTable{"ws_item_terms", "seq"}
	chunkTerms = termTable{"ws_chunk_terms", "chunk"}
)

// matchRows finds, for each of terms, the rows of workspace key that may
// hold it, sorted, in one round trip: for a plain word, the rows holding
// an index term that starts with its stem, which is exactly the rows
// that match it; for another term, the rows holding every index term
// that any text containing it holds (textsearch.InnerTerms), a superset
// of those that match it. known[i] is false when the index cannot narrow
// term i down (a term with no inner terms): any row may hold it.
func (tt termTable) matchRows(ctx context.Context, tx pgx.Tx, key int64, terms []textsearch.Term) (rows [][]int64, known []bool, err error) {
	rows = make([][]int64, len(terms))
	known = make([]bool, len(terms))
	b := &pgx.Batch{}
	var queued []int
	for i, t := range terms {
		if t.Plain {
			lo := []byte(t.Stem)
			if hi, ok := prefixEnd(lo); ok {
				b.Queue(`SELECT DISTINCT `+tt.row+` FROM `+tt.table+` WHERE ws = $1 AND term >= $2 AND term < $3 ORDER BY 1`, key, lo, hi)
			} else {
				b.Queue(`SELECT DISTINCT `+tt.row+` FROM `+tt.table+` WHERE ws = $1 AND term >= $2 ORDER BY 1`, key, lo)
			}
		} else {
			parts := textsearch.InnerTerms(t.Text)
			if len(parts) == 0 {
				continue
			}
			bs := make([][]byte, len(parts))
			for k, p := range parts {
				bs[k] = []byte(p)
			}
			b.Queue(`SELECT `+tt.row+` FROM `+tt.table+` WHERE ws = $1 AND term = ANY($2) GROUP BY 1 HAVING count(*) = $3 ORDER BY 1`,
				key, bs, len(bs))
		}
		known[i] = true
		queued = append(queued, i)
	}
	if len(queued) == 0 {
		return rows, known, nil
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for _, i := range queued {
		res, err := br.Query()
		if err != nil {
			return nil, nil, fmt.Errorf("look up %q: %w", terms[i].Text, err)
		}
		ids, err := pgx.CollectRows(res, pgx.RowTo[int64])
		if err != nil {
			return nil, nil, fmt.Errorf("look up %q: %w", terms[i].Text, err)
		}
		rows[i] = ids
	}
	return rows, known, br.Close()
}

// SearchItems ranks items by distinct terms matched, then by BM25, then by
// index (textsearch.Rank), exactly as sqlitestore does. Plain words are
// found through the index terms (stemmed prefix match); other terms by
// substring, in the items the index narrows them to. BM25 uses the
// workspace's own statistics: its number of items, and an item's length in
// characters against the average (with Fields, the length of the text
// under them against the average over the items that match).
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
	err = s.read(ctx, func(tx pgx.Tx) error {
		hits, total = nil, 0
		ref, err := lookup(ctx, tx, id, false, store.ShapeList)
		if err != nil {
			return err
		}
		if len(parsed.Terms) == 0 || ref.items == 0 {
			return nil
		}
		srch := &itemSearch{ctx: ctx, tx: tx, ref: ref, q: parsed, fields: q.Fields, items: map[int64]loaded{}}
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

// itemSearch is the state of one SearchItems call. Candidates are items
// by sequence number (Doc), which orders them as their positions do.
type itemSearch struct {
	ctx    context.Context
	tx     pgx.Tx
	ref    *wsRef
	q      *textsearch.Query
	fields []string
	cands  []textsearch.Candidate // in Doc order until ranked
	items  map[int64]loaded       // the items read so far, by seq
	// measures holds, with Fields, what ranking needs of each candidate,
	// and avgLen their average length.
	measures map[int64]textsearch.Measure
	avgLen   float64
}

func (s *itemSearch) run(limit int) ([]store.Hit, int, error) {
	rows, known, err := itemTerms.matchRows(s.ctx, s.tx, s.ref.key, s.q.Terms)
	if err != nil {
		return nil, 0, err
	}
	var (
		substr []int      // terms matched by substring
		found  []termRows // rows of the plain terms
	)
	for i, term := range s.q.Terms {
		if term.Plain {
			found = append(found, termRows{term: i, ids: rows[i]})
		} else {
			substr = append(substr, i)
		}
	}
	s.merge(found)
	if len(substr) > 0 {
		if err := s.matchSubstrings(substr, rows, known); err != nil {
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

// termRows are the rows that match a query term, sorted.
type termRows struct {
	term int
	ids  []int64
}

// merge adds each list's term to the candidates with the list's ids,
// adding the candidates missing; the candidates stay in id order, and
// each is written once however many terms there are.
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
// the terms in substr. The index narrows the items to read (rows, from
// matchRows) when every such term is known there; otherwise every item of
// the list is read.
func (s *itemSearch) matchSubstrings(substr []int, rows [][]int64, known []bool) error {
	var ids []int64
	filtered := true
	for _, i := range substr {
		if !known[i] {
			filtered = false
			break
		}
		ids = append(ids, rows[i]...)
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
		if len(batch.ids) == loadBatch {
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

// loadItems calls fn for the items with the given sequence numbers
// (sorted), or for every item of the list when all is set, in any order.
func (s *itemSearch) loadItems(ids []int64, all bool, fn func(seq int64, idx int, data []byte)) error {
	if !all && len(ids) == 0 {
		return nil
	}
	var rows pgx.Rows
	var err error
	if all || len(ids) > s.ref.items/4 {
		// Reading the whole list beats probing for most of it.
		rows, err = s.tx.Query(s.ctx, `SELECT seq, idx, data FROM ws_items WHERE ws = $1`, s.ref.key)
	} else {
		rows, err = s.tx.Query(s.ctx, `SELECT seq, idx, data FROM ws_items WHERE ws = $1 AND seq = ANY($2)`, s.ref.key, ids)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var idx int
		var data []byte
		if err := rows.Scan(&seq, &idx, &data); err != nil {
			return err
		}
		if !all {
			if _, ok := slices.BinarySearch(ids, seq); !ok {
				continue
			}
		}
		fn(seq, idx, data)
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
	return s.loadItems(ids, false, func(seq int64, idx int, data []byte) {
		s.items[seq] = loaded{idx: idx, data: data}
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

// SearchText finds passages of a text workspace, best first: those holding
// more distinct terms, then those with rarer terms and more matches, as
// sqlitestore ranks them. The index says which chunks may hold which
// terms; chunks are then read in order of how many terms they may hold,
// and matches located in Go, until no unread chunk can hold a passage with
// more terms than the ones found. A passage lies within one chunk.
func (s *Store) SearchText(ctx context.Context, id string, q store.TextQuery) ([]store.TextHit, error) {
	parsed, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		return nil, fmt.Errorf("search text %q: %w: %w", id, store.ErrInvalidQuery, err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	var hits []store.TextHit
	err = s.read(ctx, func(tx pgx.Tx) error {
		hits = nil
		ref, err := lookup(ctx, tx, id, false, store.ShapeText)
		if err != nil {
			return err
		}
		if len(parsed.Terms) == 0 || ref.nextSeq == 0 {
			return nil
		}
		hits, err = searchChunks(ctx, tx, ref, parsed, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search text %q: %w", id, err)
	}
	return hits, nil
}

func searchChunks(ctx context.Context, tx pgx.Tx, ref *wsRef, q *textsearch.Query, limit int) ([]store.TextHit, error) {
	nchunks := int(ref.nextSeq)
	rows, known, err := chunkTerms.matchRows(ctx, tx, ref.key, q.Terms)
	if err != nil {
		return nil, err
	}
	// present[c] holds the terms chunk c may contain.
	present := make([]textsearch.TermSet, nchunks)
	df := make([]int, len(q.Terms))
	for i := range q.Terms {
		if !known[i] {
			// Unknown: any chunk may hold the substring.
			for c := range present {
				present[c].Add(i)
			}
			df[i] = nchunks
			continue
		}
		for _, c := range rows[i] {
			if c < 0 || c >= int64(nchunks) {
				return nil, fmt.Errorf("index names chunk %d of %d", c, nchunks)
			}
			present[c].Add(i)
		}
		df[i] = len(rows[i])
	}
	idf := make([]float64, len(q.Terms))
	for i := range idf {
		idf[i] = math.Log(1 + float64(nchunks)/float64(max(df[i], 1)))
	}

	order := make([]int, 0, nchunks)
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
	type readChunk struct {
		start int64
		text  []byte
	}
	read := map[int]readChunk{}
	for k, c := range order {
		bound := present[c].Len()
		if len(hits) >= limit {
			slices.SortFunc(hits, compareTextHits)
			hits = hits[:limit]
			if hits[limit-1].Terms >= bound {
				break
			}
		}
		if _, ok := read[c]; !ok {
			// This chunk and the next few in order, in one query.
			clear(read)
			next := order[k:min(k+chunkBatch, len(order))]
			rows, err := tx.Query(ctx, `SELECT n, start, text FROM ws_chunks WHERE ws = $1 AND n = ANY($2)`, ref.key, next)
			if err != nil {
				return nil, fmt.Errorf("read chunks: %w", err)
			}
			for rows.Next() {
				var ch readChunk
				var n int
				if err := rows.Scan(&n, &ch.start, &ch.text); err != nil {
					rows.Close()
					return nil, fmt.Errorf("read chunks: %w", err)
				}
				read[n] = ch
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("read chunks: %w", err)
			}
		}
		ch, ok := read[c]
		if !ok {
			return nil, fmt.Errorf("chunk %d of %d is missing", c, nchunks)
		}
		matches = m.Locate(matches[:0], string(ch.text), &present[c])
		hits = appendPassages(hits, matches, ch.start, idf)
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
