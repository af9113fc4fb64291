package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/mergepatch"
	"github.com/ctxkit/ctxkit/store"
)

// insertItems inserts items as the list's items from position idx on, with
// sequence numbers from seq on, and their index terms, each table with one
// COPY.
func insertItems(ctx context.Context, tx pgx.Tx, key, seq int64, idx int, p *preparedItems) error {
	if len(p.data) == 0 {
		return nil
	}
	i := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"ws_items"}, []string{"ws", "seq", "idx", "data"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(p.data) {
				return nil, nil
			}
			i++
			return []any{key, seq + int64(i-1), int64(idx + i - 1), p.data[i-1]}, nil
		}))
	if err != nil {
		return fmt.Errorf("insert items %d to %d: %w", idx, idx+len(p.data)-1, err)
	}
	postings := sortedPostings(p.terms, seq)
	k := 0
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"ws_item_terms"}, []string{"ws", "term", "seq"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if k == len(postings) {
				return nil, nil
			}
			k++
			return []any{key, postings[k-1].term, postings[k-1].row}, nil
		}))
	if err != nil {
		return fmt.Errorf("index items: %w", err)
	}
	return nil
}

// setListCounts records a list's new size after a mutation and forgets its
// original bytes, which no longer match it. Chars becomes the size of the
// list serialised as a JSON array, and Tokens keeps its ratio to Chars.
func setListCounts(ctx context.Context, tx pgx.Tx, ref *wsRef, items int, itemChars, nextSeq int64) error {
	chars := itemChars + 2 + int64(max(items-1, 0))
	tokens := int(chars / 4)
	if ref.chars > 0 {
		tokens = int(math.Round(float64(ref.tokens) * float64(chars) / float64(ref.chars)))
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE ws_workspaces SET items = $1, item_chars = $2, next_seq = $3, chars = $4, tokens = $5 WHERE key = $6`,
		items, itemChars, nextSeq, chars, tokens, ref.key)
	b.Queue(`DELETE FROM ws_raw WHERE ws = $1`, ref.key)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("update list size: %w", err)
	}
	return nil
}

// Items returns up to limit items from offset.
func (s *Store) Items(ctx context.Context, id string, offset, limit int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := s.read(ctx, func(tx pgx.Tx) error {
		out = nil
		if offset < 0 || limit <= 0 {
			if _, err := lookup(ctx, tx, id, false, store.ShapeList); err != nil {
				return err
			}
			if offset < 0 {
				return fmt.Errorf("offset %d: %w", offset, store.ErrOutOfRange)
			}
			return nil
		}
		return lookupWith(ctx, tx, id, []store.Shape{store.ShapeList},
			`SELECT data FROM ws_items WHERE ws = (SELECT key FROM ws_workspaces WHERE id = $1) AND idx >= $2 ORDER BY idx LIMIT $3`,
			[]any{offset, limit}, func(ref *wsRef, rows pgx.Rows) error {
				out = make([]json.RawMessage, 0, max(min(limit, ref.items-offset), 0))
				for rows.Next() {
					var data []byte
					if err := rows.Scan(&data); err != nil {
						return err
					}
					out = append(out, data)
				}
				return rows.Err()
			})
	})
	if err != nil {
		return nil, fmt.Errorf("items of %q: %w", id, err)
	}
	return out, nil
}

// ScanItems yields every item in order, reading scanPage items at a time
// by sequence number (keyset pages) in one read-only REPEATABLE READ
// transaction: the scan sees one snapshot, so a concurrent mutation or
// replacement is wholly visible or not at all, and it never blocks
// writers. It holds one connection of the pool until the loop ends.
func (s *Store) ScanItems(ctx context.Context, id string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		var (
			tx  pgx.Tx
			ref *wsRef
		)
		err := retryRead(ctx, func() error {
			var err error
			if tx, err = s.db.Pool.BeginTx(ctx, readOptions); err != nil {
				return err
			}
			if ref, err = lookup(ctx, tx, id, false, store.ShapeList); err != nil {
				tx.Rollback(context.WithoutCancel(ctx))
			}
			return err
		})
		if err != nil {
			yield(nil, fmt.Errorf("scan items of %q: %w", id, err))
			return
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		n := 0
		for after := int64(-1); ; {
			page, last, err := scanPageAfter(ctx, tx, ref.key, after)
			if err != nil {
				yield(nil, fmt.Errorf("scan items of %q after %d: %w", id, n, err))
				return
			}
			for _, item := range page {
				if !yield(item, nil) {
					return
				}
				n++
			}
			if len(page) < scanPage {
				return
			}
			after = last
		}
	}
}

// scanPageAfter reads the scanPage items after sequence number after, and
// returns the last one's.
func scanPageAfter(ctx context.Context, tx pgx.Tx, key, after int64) ([]json.RawMessage, int64, error) {
	rows, err := tx.Query(ctx, `SELECT seq, data FROM ws_items WHERE ws = $1 AND seq > $2 ORDER BY seq LIMIT $3`, key, after, scanPage)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	page := make([]json.RawMessage, 0, scanPage)
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&after, &data); err != nil {
			return nil, 0, err
		}
		page = append(page, data)
	}
	return page, after, rows.Err()
}

// AppendItems adds items at the end. The workspace's row is locked, so
// that appends from any number of processes queue and none is lost.
func (s *Store) AppendItems(ctx context.Context, id string, items []json.RawMessage) error {
	p, err := prepareItems(items)
	if err != nil {
		return fmt.Errorf("append to %q: %w", id, err)
	}
	if len(p.data) == 0 {
		err = s.read(ctx, func(tx pgx.Tx) error {
			_, err := lookup(ctx, tx, id, false, store.ShapeList)
			return err
		})
	} else {
		err = s.db.Write(ctx, func(tx pgx.Tx) error {
			ref, err := lookup(ctx, tx, id, true, store.ShapeList)
			if err != nil {
				return err
			}
			if err := insertItems(ctx, tx, ref.key, ref.nextSeq, ref.items, p); err != nil {
				return err
			}
			return setListCounts(ctx, tx, ref, ref.items+len(p.data), ref.itemChars+p.chars, ref.nextSeq+int64(len(p.data)))
		})
	}
	if err != nil {
		return fmt.Errorf("append to %q: %w", id, err)
	}
	return nil
}

// UpdateItem replaces the item at index.
func (s *Store) UpdateItem(ctx context.Context, id string, index int, item json.RawMessage) error {
	if err := jsonscan.Validate(item); err != nil {
		return fmt.Errorf("update item %d of %q: %w", index, id, err)
	}
	item = slices.Clone(item)
	err := s.db.Write(ctx, func(tx pgx.Tx) error {
		return replaceItem(ctx, tx, id, index, func([]byte) ([]byte, error) { return item, nil })
	})
	if err != nil {
		return fmt.Errorf("update item %d of %q: %w", index, id, err)
	}
	return nil
}

// PatchItem merges patch, an RFC 7386 merge patch, into the object at
// index (see package internal/mergepatch).
func (s *Store) PatchItem(ctx context.Context, id string, index int, patch json.RawMessage) error {
	p, err := mergepatch.Parse(patch)
	if err != nil {
		return fmt.Errorf("patch item %d of %q: %w", index, id, err)
	}
	err = s.db.Write(ctx, func(tx pgx.Tx) error {
		return replaceItem(ctx, tx, id, index, p.Apply)
	})
	if err != nil {
		return fmt.Errorf("patch item %d of %q: %w", index, id, err)
	}
	return nil
}

// replaceItem replaces the item at index with change(item), keeping its
// sequence number (and so its place), and replaces its index terms.
func replaceItem(ctx context.Context, tx pgx.Tx, id string, index int, change func([]byte) ([]byte, error)) error {
	ref, err := lookup(ctx, tx, id, true, store.ShapeList)
	if err != nil {
		return err
	}
	if index < 0 || index >= ref.items {
		return fmt.Errorf("index %d of %d items: %w", index, ref.items, store.ErrOutOfRange)
	}
	var seq int64
	var old []byte
	if err := tx.QueryRow(ctx, `SELECT seq, data FROM ws_items WHERE ws = $1 AND idx = $2`, ref.key, index).Scan(&seq, &old); err != nil {
		return fmt.Errorf("read item: %w", err)
	}
	item, err := change(old)
	if err != nil {
		return err
	}
	var tb termBuilder
	var sc jsonscan.Scalars
	var buf []byte
	oldTerms, _ := tb.itemTerms(&sc, &buf, old)
	newTerms, _ := tb.itemTerms(&sc, &buf, item)
	b := &pgx.Batch{}
	b.Queue(`UPDATE ws_items SET data = $1 WHERE ws = $2 AND seq = $3`, item, ref.key, seq)
	queueUnindex(b, ref.key, [][][]byte{oldTerms}, []int64{seq})
	b.Queue(`INSERT INTO ws_item_terms (ws, term, seq) SELECT $1, t, $3 FROM unnest($2::bytea[]) AS t`, ref.key, newTerms, seq)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("replace item: %w", err)
	}
	chars := ref.itemChars - int64(utf8.RuneCount(old)) + int64(utf8.RuneCount(item))
	return setListCounts(ctx, tx, ref, ref.items, chars, ref.nextSeq)
}

// queueUnindex queues the deletion of the index terms of the items with
// the given sequence numbers, terms[i] those of seqs[i]: they are computed
// again from the items, as Put computed them, so that the terms table
// needs no index by item.
func queueUnindex(b *pgx.Batch, key int64, terms [][][]byte, seqs []int64) {
	var ts [][]byte
	var ss []int64
	for i, t := range terms {
		for _, term := range t {
			ts = append(ts, term)
			ss = append(ss, seqs[i])
		}
	}
	if len(ts) == 0 {
		return
	}
	b.Queue(`DELETE FROM ws_item_terms WHERE ws = $1 AND (term, seq) IN (SELECT * FROM unnest($2::bytea[], $3::bigint[]))`, key, ts, ss)
}

// DeleteItems removes the items at the given indexes; later items move up.
// An index out of range fails the call before anything changes.
func (s *Store) DeleteItems(ctx context.Context, id string, indexes []int) error {
	del := slices.Clone(indexes)
	slices.Sort(del)
	del = slices.Compact(del)
	if len(del) == 0 {
		err := s.read(ctx, func(tx pgx.Tx) error {
			_, err := lookup(ctx, tx, id, false, store.ShapeList)
			return err
		})
		if err != nil {
			return fmt.Errorf("delete items of %q: %w", id, err)
		}
		return nil
	}
	err := s.db.Write(ctx, func(tx pgx.Tx) error {
		ref, err := lookup(ctx, tx, id, true, store.ShapeList)
		if err != nil {
			return err
		}
		if del[0] < 0 || del[len(del)-1] >= ref.items {
			bad := del[0]
			if bad >= 0 {
				bad = del[len(del)-1]
			}
			return fmt.Errorf("index %d of %d items: %w", bad, ref.items, store.ErrOutOfRange)
		}
		rows, err := tx.Query(ctx, `SELECT seq, data FROM ws_items WHERE ws = $1 AND idx = ANY($2)`, ref.key, del)
		if err != nil {
			return err
		}
		var (
			seqs  []int64
			terms [][][]byte
			chars int64
			tb    termBuilder
			sc    jsonscan.Scalars
			buf   []byte
		)
		for rows.Next() {
			var seq int64
			var data []byte
			if err := rows.Scan(&seq, &data); err != nil {
				rows.Close()
				return err
			}
			t, _ := tb.itemTerms(&sc, &buf, data)
			seqs = append(seqs, seq)
			terms = append(terms, t)
			chars += int64(utf8.RuneCount(data))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(seqs) != len(del) {
			return fmt.Errorf("found %d of %d items to delete: list positions are inconsistent", len(seqs), len(del))
		}
		b := &pgx.Batch{}
		queueUnindex(b, ref.key, terms, seqs)
		b.Queue(`DELETE FROM ws_items WHERE ws = $1 AND seq = ANY($2)`, ref.key, seqs)
		// Items between two deleted positions move up by the number of
		// deletions before them.
		for j, d := range del {
			next := ref.items
			if j+1 < len(del) {
				next = del[j+1]
			}
			if next == d+1 {
				continue
			}
			b.Queue(`UPDATE ws_items SET idx = idx - $1 WHERE ws = $2 AND idx > $3 AND idx < $4`, j+1, ref.key, d, next)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("delete and renumber items: %w", err)
		}
		return setListCounts(ctx, tx, ref, ref.items-len(del), ref.itemChars-chars, ref.nextSeq)
	})
	if err != nil {
		return fmt.Errorf("delete items of %q: %w", id, err)
	}
	return nil
}
