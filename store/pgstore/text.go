package pgstore

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/store/internal/rank"
)

// insertChunks stores a text's chunks and their index terms, each table
// with one COPY.
func insertChunks(ctx context.Context, tx pgx.Tx, key int64, chunks []textsearch.Chunk, terms [][][]byte) error {
	if len(chunks) == 0 {
		return nil
	}
	if len(chunks) > math.MaxInt32 {
		return fmt.Errorf("text of %d chunks is too long", len(chunks))
	}
	i := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"ws_chunks"}, []string{"ws", "n", "start", "runes", "text"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(chunks) {
				return nil, nil
			}
			c := chunks[i]
			i++
			return []any{key, int32(i - 1), c.Start, int32(c.Runes), []byte(c.Text)}, nil
		}))
	if err != nil {
		return fmt.Errorf("insert text chunks: %w", err)
	}
	i, j := 0, 0
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"ws_chunk_terms"}, []string{"ws", "term", "chunk"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for i < len(terms) && j == len(terms[i]) {
				i, j = i+1, 0
			}
			if i == len(terms) {
				return nil, nil
			}
			j++
			return []any{key, terms[i][j-1], int32(i)}, nil
		}))
	if err != nil {
		return fmt.Errorf("index text: %w", err)
	}
	return nil
}

// TextSlice returns up to n characters of a text workspace from offset,
// reading only the chunks that hold them.
func (s *Store) TextSlice(ctx context.Context, id string, offset, n int64) (string, error) {
	var b strings.Builder
	err := s.read(ctx, func(tx pgx.Tx) error {
		b.Reset()
		if offset < 0 || n <= 0 {
			if _, err := lookup(ctx, tx, id, false, store.ShapeText); err != nil {
				return err
			}
			if offset < 0 {
				return fmt.Errorf("offset %d: %w", offset, store.ErrOutOfRange)
			}
			return nil
		}
		end := offset + min(n, math.MaxInt64-offset)
		return lookupWith(ctx, tx, id, []store.Shape{store.ShapeText}, `
			WITH w AS (SELECT key FROM ws_workspaces WHERE id = $1)
			SELECT start, text FROM ws_chunks
			WHERE ws = (SELECT key FROM w) AND start < $3
			AND start >= (SELECT coalesce(max(start), 0) FROM ws_chunks WHERE ws = (SELECT key FROM w) AND start <= $2)
			ORDER BY start`, []any{offset, end}, func(_ *wsRef, rows pgx.Rows) error {
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
	})
	if err != nil {
		return "", fmt.Errorf("text slice of %q: %w", id, err)
	}
	return b.String(), nil
}
