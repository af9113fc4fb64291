package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/rank"
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
	limit := rank.Limit(q.Limit)
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
		hits, total, err = rank.Items(parsed, q.Fields, rank.List{Items: ref.items, Chars: ref.itemChars, Source: itemSource{t, ref}},
			itemPostings(t, ref, parsed), limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", id, err)
	}
	return hits, total, nil
}

// itemPostings gives the items of the list ref that may hold each term of
// q, from the full-text index: a failed lookup of a substring filter other
// than for cancellation or a busy database leaves the term unknown.
func itemPostings(t *txn, ref *wsRef, q *textsearch.Query) rank.Postings {
	lo, hi := idBase(ref.key), idBase(ref.key+1)
	prefix := termPrefix(ref.key)
	return func(i int) ([]int64, bool, error) {
		term := q.Terms[i]
		if term.Plain {
			ids, err := ftsRowids(t, qMatchItems, ftsPrefix(prefix, term.Stem), lo, hi)
			return ids, err == nil, err
		}
		expr := substringFilter(prefix, term.Text)
		if expr == "" {
			return nil, false, nil
		}
		ids, err := ftsRowids(t, qMatchItems, expr, lo, hi)
		if err != nil {
			if t.ctx.Err() != nil || sqlitedb.IsBusy(err) {
				return nil, false, err
			}
			return nil, false, nil
		}
		return ids, true, nil
	}
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

// itemSource reads the items of the list ref for rank.Items, by id.
type itemSource struct {
	t   *txn
	ref *wsRef
}

// All calls fn for every item of the list.
func (src itemSource) All(fn func(id int64, idx int, data []byte)) error {
	return src.scan(fn, qItemsRange, idBase(src.ref.key), idBase(src.ref.key+1))
}

// ByID calls fn for the items with the given ids.
func (src itemSource) ByID(ids []int64, fn func(id int64, idx int, data []byte)) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return src.scan(fn, qItemsByID, string(list))
}

func (src itemSource) scan(fn func(id int64, idx int, data []byte), query string, args ...any) error {
	rows, err := src.t.query(query, args...)
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
		fn(id, idx, data)
	}
	return rows.Err()
}
