package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/rank"
)

// Search bounds.
const (
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
	limit := rank.Limit(q.Limit)
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
		rows, known, err := itemTerms.matchRows(ctx, tx, ref.key, parsed.Terms)
		if err != nil {
			return err
		}
		hits, total, err = rank.Items(parsed, q.Fields, rank.List{Items: ref.items, Chars: ref.itemChars, Source: itemSource{ctx, tx, ref}},
			matched(rows, known), limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", id, err)
	}
	return hits, total, nil
}

// matched gives rank the rows matchRows found.
func matched(rows [][]int64, known []bool) rank.Postings {
	return func(i int) ([]int64, bool, error) { return rows[i], known[i], nil }
}

// itemSource reads the items of the list ref for rank.Items, by sequence
// number.
type itemSource struct {
	ctx context.Context
	tx  pgx.Tx
	ref *wsRef
}

// All calls fn for every item of the list.
func (src itemSource) All(fn func(seq int64, idx int, data []byte)) error {
	return src.scan(fn, `SELECT seq, idx, data FROM ws_items WHERE ws = $1`, src.ref.key)
}

// ByID calls fn for the items with the given sequence numbers.
func (src itemSource) ByID(seqs []int64, fn func(seq int64, idx int, data []byte)) error {
	return src.scan(fn, `SELECT seq, idx, data FROM ws_items WHERE ws = $1 AND seq = ANY($2)`, src.ref.key, seqs)
}

func (src itemSource) scan(fn func(seq int64, idx int, data []byte), query string, args ...any) error {
	rows, err := src.tx.Query(src.ctx, query, args...)
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
		fn(seq, idx, data)
	}
	return rows.Err()
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
	limit := rank.Limit(q.Limit)
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

// searchChunks ranks the passages of the text ref (rank.Passages), reading
// chunkBatch chunks at a time.
func searchChunks(ctx context.Context, tx pgx.Tx, ref *wsRef, q *textsearch.Query, limit int) ([]store.TextHit, error) {
	nchunks := int(ref.nextSeq)
	rows, known, err := chunkTerms.matchRows(ctx, tx, ref.key, q.Terms)
	if err != nil {
		return nil, err
	}
	type readChunk struct {
		start int64
		text  []byte
	}
	read := map[int]readChunk{}
	return rank.Passages(q, nchunks, matched(rows, known), func(c int, next []int) (int64, string, error) {
		if _, ok := read[c]; !ok {
			// This chunk and the next few in order, in one query.
			clear(read)
			next = next[:min(chunkBatch, len(next))]
			rows, err := tx.Query(ctx, `SELECT n, start, text FROM ws_chunks WHERE ws = $1 AND n = ANY($2)`, ref.key, next)
			if err != nil {
				return 0, "", fmt.Errorf("read chunks: %w", err)
			}
			for rows.Next() {
				var ch readChunk
				var n int
				if err := rows.Scan(&n, &ch.start, &ch.text); err != nil {
					rows.Close()
					return 0, "", fmt.Errorf("read chunks: %w", err)
				}
				read[n] = ch
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return 0, "", fmt.Errorf("read chunks: %w", err)
			}
		}
		ch, ok := read[c]
		if !ok {
			return 0, "", fmt.Errorf("chunk %d of %d is missing", c, nchunks)
		}
		return ch.start, string(ch.text), nil
	}, limit)
}
