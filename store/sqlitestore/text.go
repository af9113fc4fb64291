package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"

	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/rank"
)

// Text layout.
const (
	// defaultChunkRunes is the size a text chunk aims for. A chunk is the
	// unit the text index matches and TextSlice reads: small enough that a
	// slice reads little more than it returns, large enough that a 50 MB
	// text is a few thousand rows.
	defaultChunkRunes = 16 << 10
	// chunkBatch is how many chunks one INSERT statement carries.
	chunkBatch = 16
)

// insertChunks stores a text's chunks and, unless terms is nil, indexes
// them in one statement.
func (s *Store) insertChunks(t *txn, key int64, chunks []textsearch.Chunk, terms []string) error {
	if len(chunks) == 0 {
		return nil
	}
	if len(chunks) > maxSeq {
		return fmt.Errorf("text of %d chunks is too long", len(chunks))
	}
	args := make([]any, 0, 5*chunkBatch)
	for start := 0; start < len(chunks); start += chunkBatch {
		end := min(start+chunkBatch, len(chunks))
		args = args[:0]
		for i := start; i < end; i++ {
			c := chunks[i]
			args = append(args, idBase(key)+int64(i), key, c.Start, c.Runes, c.Text)
			t.wrote += int64(len(c.Text))
		}
		q := `INSERT INTO chunks (id, ws, start, runes, text) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?),`, end-start), ",")
		if _, err := t.exec(q, args...); err != nil {
			return fmt.Errorf("insert text chunks: %w", err)
		}
	}
	if _, err := t.exec(qChunkCount, len(chunks), key); err != nil {
		return err
	}
	if terms == nil {
		return nil // indexed later
	}
	lo := idBase(key)
	t.wrote += termBytes(terms)
	s.staged.set(termPrefix(key), terms)
	defer s.staged.set("", nil)
	if _, err := t.exec(qIndexChunks, lo, lo+int64(len(chunks))); err != nil {
		return fmt.Errorf("index text: %w", err)
	}
	return nil
}

// readText returns a text workspace's whole text.
func readText(t *txn, ref *wsRef) ([]byte, error) {
	rows, err := t.query(qChunksAll, idBase(ref.key), idBase(ref.key+1))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []byte{}
	for rows.Next() {
		var text sql.RawBytes
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		out = append(out, text...)
	}
	return out, rows.Err()
}

// TextSlice returns up to n characters of a text workspace from offset,
// reading only the chunks that hold them.
func (s *Store) TextSlice(ctx context.Context, id string, offset, n int64) (string, error) {
	var b strings.Builder
	err := s.read(ctx, func(t *txn) error {
		b.Reset()
		ref, err := lookup(t, id, store.ShapeText)
		if err != nil {
			return err
		}
		if offset < 0 {
			return fmt.Errorf("offset %d: %w", offset, store.ErrOutOfRange)
		}
		if n <= 0 {
			return nil
		}
		end := offset + min(n, math.MaxInt64-offset)
		rows, err := t.query(qChunksSpan, ref.key, offset, end)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var start int64
			var text []byte
			if err := rows.Scan(&start, &text); err != nil {
				return err
			}
			b.Write(rank.Span(text, start, offset, end))
		}
		return rows.Err()
	})
	if err != nil {
		return "", fmt.Errorf("text slice of %q: %w", id, err)
	}
	return b.String(), nil
}

// SearchText finds passages of a text workspace, best first: those holding
// more distinct terms, then those with rarer terms and more matches. The
// index says which chunks hold which plain words; chunks are then read in
// order of how many terms they may hold, and matches located in Go, until
// no unread chunk can hold a passage with more terms than the ones found.
// A passage lies within one chunk.
func (s *Store) SearchText(ctx context.Context, id string, q store.TextQuery) ([]store.TextHit, error) {
	parsed, err := textsearch.ParseQuery(q.Text)
	if err != nil {
		return nil, fmt.Errorf("search text %q: %w: %w", id, store.ErrInvalidQuery, err)
	}
	limit := rank.Limit(q.Limit)
	var hits []store.TextHit
	err = s.searchIndexed(ctx, id, func(t *txn) error {
		hits = nil
		ref, err := lookup(t, id, store.ShapeText)
		if err != nil {
			return err
		}
		if len(parsed.Terms) == 0 || ref.nextSeq == 0 {
			return nil
		}
		if !ref.indexed {
			return errNotIndexed
		}
		hits, err = searchChunks(t, ref, parsed, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("search text %q: %w", id, err)
	}
	return hits, nil
}

// searchChunks ranks the passages of the text ref (rank.Passages), the
// chunks that may hold each term given by the full-text index: a failed
// lookup of a substring filter other than for cancellation or a busy
// database leaves the term unknown.
func searchChunks(t *txn, ref *wsRef, q *textsearch.Query, limit int) ([]store.TextHit, error) {
	lo := idBase(ref.key)
	hi := lo + ref.nextSeq
	postings := func(i int) ([]int64, bool, error) {
		term := q.Terms[i]
		var expr string
		if term.Plain {
			expr = ftsPrefix(termPrefix(ref.key), term.Stem)
		} else {
			expr = substringFilter(termPrefix(ref.key), term.Text)
		}
		if expr == "" {
			return nil, false, nil
		}
		ids, err := ftsRowids(t, qMatchChunks, expr, lo, hi)
		if err != nil {
			if term.Plain || t.ctx.Err() != nil || sqlitedb.IsBusy(err) {
				return nil, false, err
			}
			return nil, false, nil
		}
		for k := range ids {
			ids[k] -= lo
		}
		return ids, true, nil
	}
	read := func(c int, _ []int) (int64, string, error) {
		var start int64
		var text string
		if err := t.queryRow(qChunk, lo+int64(c)).Scan(&start, &text); err != nil {
			return 0, "", fmt.Errorf("read chunk %d: %w", c, err)
		}
		return start, text, nil
	}
	return rank.Passages(q, int(ref.nextSeq), postings, read, limit)
}
