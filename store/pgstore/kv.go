package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/store"
)

// eachPage is how many entries Each reads at a time.
const eachPage = 256

// KV is a [store.KV] in the table kv of a PostgreSQL database, shared by
// every process using it. Keys are bytes (bytea), ordered byte by byte.
type KV struct {
	db *pgdb.DB
}

var _ store.KV = (*KV)(nil)

// NewKV returns the key-value store of db, whose schema Migrate has
// brought up to date.
func NewKV(db *pgdb.DB) *KV { return &KV{db: db} }

// Get returns key's value unless it has expired at now.
func (kv *KV) Get(ctx context.Context, key string, now time.Time) ([]byte, error) {
	var v []byte
	err := kv.db.Read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT value FROM kv WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)`,
			[]byte(key), now.UnixMicro()).Scan(&v)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("key %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return v, nil
}

// Put sets key; a ttl > 0 makes it expire at now+ttl.
func (kv *KV) Put(ctx context.Context, key string, value []byte, now time.Time, ttl time.Duration) error {
	var expires any
	if ttl > 0 {
		expires = now.Add(ttl).UnixMicro()
	}
	if value == nil {
		value = []byte{}
	}
	err := kv.db.Write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO kv (key, value, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`, []byte(key), value, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// Delete removes key; a missing key is no error.
func (kv *KV) Delete(ctx context.Context, key string) error {
	err := kv.db.Write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM kv WHERE key = $1`, []byte(key))
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	return nil
}

// DeleteExpired removes every key expired at now and says how many.
func (kv *KV) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := kv.db.Write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM kv WHERE expires_at <= $1`, now.UnixMicro())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired keys: %w", err)
	}
	return int(n), nil
}

// Each calls fn with every key not expired at now, by key, with its value and expiry (zero when none).
//
// It reads eachPage entries at a time, each page in its own transaction,
// and calls fn between them, holding no connection: fn may use the store.
// An entry put or deleted during the walk is seen or not depending on
// where the walk is. An error from fn stops the walk and is returned.
func (kv *KV) Each(ctx context.Context, now time.Time, fn func(key string, value []byte, expires time.Time) error) error {
	type entry struct {
		key, value []byte
		expires    *int64
	}
	const (
		qFirst = `SELECT key, value, expires_at FROM kv WHERE (expires_at IS NULL OR expires_at > $1)
			ORDER BY key LIMIT $2`
		qNext = `SELECT key, value, expires_at FROM kv WHERE (expires_at IS NULL OR expires_at > $1) AND key > $3
			ORDER BY key LIMIT $2`
	)
	var after []byte
	for first := true; ; first = false {
		var page []entry
		err := kv.db.Read(ctx, func(tx pgx.Tx) error {
			page = page[:0]
			q, args := qFirst, []any{now.UnixMicro(), eachPage}
			if !first {
				q, args = qNext, append(args, after)
			}
			rows, err := tx.Query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var e entry
				if err := rows.Scan(&e.key, &e.value, &e.expires); err != nil {
					return err
				}
				page = append(page, e)
			}
			return rows.Err()
		})
		if err != nil {
			return fmt.Errorf("list keys: %w", err)
		}
		for _, e := range page {
			if err := fn(string(e.key), e.value, fromMicros(e.expires)); err != nil {
				return err
			}
		}
		if len(page) < eachPage {
			return nil
		}
		after = page[len(page)-1].key
	}
}
