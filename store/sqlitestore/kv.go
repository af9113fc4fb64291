package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/store"
)

// KV is the [store.KV] of a Store: a table of the same file.
type KV struct{ s *Store }

var _ store.KV = KV{}

// KV returns the store's key-value store.
func (s *Store) KV() KV { return KV{s} }

// Get returns key's value unless it has expired at now.
func (kv KV) Get(ctx context.Context, key string, now time.Time) ([]byte, error) {
	var v []byte
	err := kv.s.read(ctx, func(t *txn) error {
		return t.tx.QueryRowContext(ctx, `SELECT value FROM kv WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)`,
			key, now.UnixMicro()).Scan(&v)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("key %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return v, nil
}

// Put sets key.
func (kv KV) Put(ctx context.Context, key string, value []byte, now time.Time, ttl time.Duration) error {
	var expires any
	if ttl > 0 {
		expires = now.Add(ttl).UnixMicro()
	}
	if value == nil {
		value = []byte{}
	}
	err := kv.s.write(ctx, func(t *txn) error {
		_, err := t.tx.ExecContext(ctx, `INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`, key, value, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// Delete removes key.
func (kv KV) Delete(ctx context.Context, key string) error {
	err := kv.s.write(ctx, func(t *txn) error {
		_, err := t.tx.ExecContext(ctx, `DELETE FROM kv WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %q: %w", key, err)
	}
	return nil
}

// DeleteExpired removes the keys expired at now.
func (kv KV) DeleteExpired(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := kv.s.write(ctx, func(t *txn) error {
		res, err := t.tx.ExecContext(ctx, `DELETE FROM kv WHERE expires_at <= ?`, now.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired keys: %w", err)
	}
	return int(n), nil
}

// Each calls fn with every key not expired at now, by key. The entries are
// read in one transaction, and fn is called after it ends (the store is
// small), so that fn may use the store.
func (kv KV) Each(ctx context.Context, now time.Time, fn func(key string, value []byte, expires time.Time) error) error {
	type entry struct {
		key     string
		value   []byte
		expires time.Time
	}
	var all []entry
	err := kv.s.read(ctx, func(t *txn) error {
		all = all[:0]
		rows, err := t.tx.QueryContext(ctx, `SELECT key, value, expires_at FROM kv WHERE expires_at IS NULL OR expires_at > ? ORDER BY key`,
			now.UnixMicro())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e entry
			var exp sql.NullInt64
			if err := rows.Scan(&e.key, &e.value, &exp); err != nil {
				return err
			}
			if exp.Valid {
				e.expires = time.UnixMicro(exp.Int64).UTC()
			}
			if e.value == nil {
				e.value = []byte{}
			}
			all = append(all, e)
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("list keys: %w", err)
	}
	for _, e := range all {
		if err := fn(e.key, e.value, e.expires); err != nil {
			return err
		}
	}
	return nil
}
