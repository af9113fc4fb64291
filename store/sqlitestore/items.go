package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/mergepatch"
	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/store"
)

// itemBatch is how many items one INSERT statement carries: fewer round
// trips into SQLite than one statement per item, well under its limit of
// bound parameters.
const itemBatch = 128

// maxSeq bounds an item's sequence number, which must fit the low 32 bits
// of its id.
const maxSeq = 1<<32 - 1

// insertItems inserts items as the list's items from position idx on, with
// sequence numbers from seq on, and indexes them with their terms unless
// terms is nil. The index is fed by one INSERT … SELECT after the rows (see
// stager).
func (s *Store) insertItems(t *txn, key, seq int64, idx int, items [][]byte, terms []string) error {
	if len(items) == 0 {
		return nil
	}
	if seq+int64(len(items)) > maxSeq {
		return fmt.Errorf("list would exceed %d items ever added", maxSeq)
	}
	args := make([]any, 0, 4*itemBatch)
	for start := 0; start < len(items); start += itemBatch {
		end := min(start+itemBatch, len(items))
		args = args[:0]
		for i := start; i < end; i++ {
			args = append(args, idBase(key)+seq+int64(i), key, idx+i, textArg(items[i]))
			t.wrote += int64(len(items[i]))
		}
		q := qInsertItems // prepared; a shorter last batch is not
		if end-start < itemBatch {
			q = insertItemsSQL(end - start)
		}
		if _, err := t.exec(q, args...); err != nil {
			return fmt.Errorf("insert items %d to %d: %w", idx+start, idx+end-1, err)
		}
	}
	if terms == nil {
		return nil // indexed later
	}
	lo := idBase(key) + seq
	t.wrote += termBytes(terms)
	s.staged.set(termPrefix(key), terms)
	defer s.staged.set("", nil)
	if _, err := t.exec(qIndexItems, lo, lo+int64(len(items))); err != nil {
		return fmt.Errorf("index items: %w", err)
	}
	return nil
}

// qInsertItems inserts itemBatch items.
var qInsertItems = insertItemsSQL(itemBatch)

// insertItemsSQL is the statement inserting n items.
func insertItemsSQL(n int) string {
	return `INSERT INTO items (id, ws, idx, data) VALUES ` + strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?),`, n), ",")
}

// setListCounts records a list's new size after a mutation and forgets its
// original bytes, which no longer match it. Chars becomes the size of the
// list serialised as a JSON array, and Tokens keeps its ratio to Chars.
func setListCounts(t *txn, ref *wsRef, items int, itemChars, nextSeq int64) error {
	chars := itemChars + 2 + int64(max(items-1, 0))
	tokens := int(chars / 4)
	if ref.chars > 0 {
		tokens = int(math.Round(float64(ref.tokens) * float64(chars) / float64(ref.chars)))
	}
	if _, err := t.exec(qListSize, items, itemChars, nextSeq, chars, tokens, ref.key); err != nil {
		return fmt.Errorf("update list size: %w", err)
	}
	if _, err := t.exec(qDeleteBlobs, ref.key); err != nil {
		return fmt.Errorf("drop original bytes: %w", err)
	}
	return nil
}

// Items returns up to limit items from offset.
func (s *Store) Items(ctx context.Context, id string, offset, limit int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	err := s.read(ctx, func(t *txn) error {
		out = nil
		ref, err := lookup(t, id, store.ShapeList)
		if err != nil {
			return err
		}
		if offset < 0 {
			return fmt.Errorf("offset %d: %w", offset, store.ErrOutOfRange)
		}
		n := min(limit, ref.items-offset)
		if n <= 0 {
			return nil
		}
		rows, err := t.query(qItemsPage, ref.key, offset, n)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = make([]json.RawMessage, 0, n)
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				return err
			}
			out = append(out, data)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("items of %q: %w", id, err)
	}
	return out, nil
}

// ScanItems yields every item in order. The scan reads one snapshot, so a
// concurrent mutation or replacement is either wholly visible or not at all;
// it holds one read connection until the loop ends, and never blocks writers.
func (s *Store) ScanItems(ctx context.Context, id string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		var (
			tx   *sql.Tx
			rows *sql.Rows
		)
		err := sqlitedb.Retry(ctx, func() error {
			var err error
			if tx, err = s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err != nil {
				return err
			}
			t := &txn{ctx: ctx, tx: tx, stmts: s.rst}
			ref, err := lookup(t, id, store.ShapeList)
			if err == nil {
				rows, err = t.query(qItemsAll, idBase(ref.key), idBase(ref.key+1))
			}
			if err != nil {
				tx.Rollback()
			}
			return err
		})
		if err != nil {
			yield(nil, fmt.Errorf("scan items of %q: %w", id, err))
			return
		}
		defer tx.Rollback()
		defer rows.Close()
		n := 0
		for rows.Next() {
			var data []byte
			if err := rows.Scan(&data); err != nil {
				yield(nil, fmt.Errorf("scan item %d of %q: %w", n, id, err))
				return
			}
			if !yield(data, nil) {
				return
			}
			n++
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("scan items of %q after %d: %w", id, n, err))
		}
	}
}

// AppendItems adds items at the end.
func (s *Store) AppendItems(ctx context.Context, id string, items []json.RawMessage) error {
	p, err := prepareItems(items, true)
	if err != nil {
		return fmt.Errorf("append to %q: %w", id, err)
	}
	if len(p.data) == 0 {
		err = s.read(ctx, func(t *txn) error {
			_, err := lookup(t, id, store.ShapeList)
			return err
		})
	} else {
		err = s.write(ctx, func(t *txn) error {
			ref, err := lookup(t, id, store.ShapeList)
			if err != nil {
				return err
			}
			terms := p.terms
			if !ref.indexed {
				terms = nil // the whole list is indexed later
			}
			if err := s.insertItems(t, ref.key, ref.nextSeq, ref.items, p.data, terms); err != nil {
				return err
			}
			return setListCounts(t, ref, ref.items+len(p.data), ref.itemChars+p.chars, ref.nextSeq+int64(len(p.data)))
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
	err := s.write(ctx, func(t *txn) error {
		return replaceItem(t, id, index, func([]byte) ([]byte, error) { return item, nil })
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
	err = s.write(ctx, func(t *txn) error {
		return replaceItem(t, id, index, p.Apply)
	})
	if err != nil {
		return fmt.Errorf("patch item %d of %q: %w", index, id, err)
	}
	return nil
}

// replaceItem replaces the item at index with change(item), keeping its id
// (and so its place in id order), and reindexes it.
func replaceItem(t *txn, id string, index int, change func([]byte) ([]byte, error)) error {
	ref, err := lookup(t, id, store.ShapeList)
	if err != nil {
		return err
	}
	if index < 0 || index >= ref.items {
		return fmt.Errorf("index %d of %d items: %w", index, ref.items, store.ErrOutOfRange)
	}
	var itemID int64
	var old []byte
	if err := t.queryRow(qItemAt, ref.key, index).Scan(&itemID, &old); err != nil {
		return fmt.Errorf("read item: %w", err)
	}
	item, err := change(old)
	if err != nil {
		return err
	}
	if _, err := t.exec(qUpdateItem, textArg(item), itemID); err != nil {
		return err
	}
	if ref.indexed {
		if _, err := t.exec(qUnindexItem, itemID); err != nil {
			return fmt.Errorf("unindex item: %w", err)
		}
		if _, err := t.exec(qIndexItem, itemID, prefixTerms(termPrefix(ref.key), itemIndexTerms(item))); err != nil {
			return fmt.Errorf("index item: %w", err)
		}
	}
	chars := ref.itemChars - int64(utf8.RuneCount(old)) + int64(utf8.RuneCount(item))
	return setListCounts(t, ref, ref.items, chars, ref.nextSeq)
}

// DeleteItems removes the items at the given indexes; later items move up.
// An index out of range fails the call before anything changes.
func (s *Store) DeleteItems(ctx context.Context, id string, indexes []int) error {
	del := slices.Clone(indexes)
	slices.Sort(del)
	del = slices.Compact(del)
	if len(del) == 0 {
		return s.read(ctx, func(t *txn) error {
			_, err := lookup(t, id, store.ShapeList)
			return err
		})
	}
	err := s.write(ctx, func(t *txn) error {
		ref, err := lookup(t, id, store.ShapeList)
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
		positions, err := json.Marshal(del)
		if err != nil {
			return err
		}
		rows, err := t.query(qItemsAt, ref.key, string(positions))
		if err != nil {
			return err
		}
		var ids []int64
		var chars int64
		for rows.Next() {
			var itemID int64
			var data sql.RawBytes
			if err := rows.Scan(&itemID, &data); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, itemID)
			chars += int64(utf8.RuneCount(data))
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(ids) != len(del) {
			return fmt.Errorf("found %d of %d items to delete: list positions are inconsistent", len(ids), len(del))
		}
		idList, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		if ref.indexed {
			if _, err := t.exec(qUnindexSome, string(idList)); err != nil {
				return fmt.Errorf("unindex items: %w", err)
			}
		}
		if _, err := t.exec(qDeleteItems, string(idList)); err != nil {
			return err
		}
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
			if _, err := t.exec(qShiftItems, j+1, ref.key, d, next); err != nil {
				return fmt.Errorf("renumber items: %w", err)
			}
		}
		return setListCounts(t, ref, ref.items-len(del), ref.itemChars-chars, ref.nextSeq)
	})
	if err != nil {
		return fmt.Errorf("delete items of %q: %w", id, err)
	}
	return nil
}
