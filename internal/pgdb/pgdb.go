// Package pgdb opens ctxkit's PostgreSQL databases: a pgx connection pool
// (pgxpool) from a store URL, transactions that are retried where that is
// safe, and schema migrations serialised across processes by an advisory
// lock. The PostgreSQL stores (pgstore, pgregistry, pgindex, pgepisodic)
// share one pool and one schema (the URL's search_path, "public" by
// default), each with its own migration steps recorded by name in the
// table ctxkit_schema.
//
// Retries: a transaction is run again when PostgreSQL rolled it back for
// a serialization failure or a deadlock, and when the connection failed
// before anything was sent. A read is also run again when its connection
// is lost midway, since it changed nothing; a write whose connection is
// lost after it was sent is reported to the caller, never retried and
// never taken for done, since it may or may not have committed.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	neturl "net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnectTimeout bounds how long Open waits for the server to answer.
const ConnectTimeout = 10 * time.Second

// MinPoolSize is the connection pool's size unless the URL sets
// pool_max_conns: pgx's default (the number of CPUs, at least 4) leaves a
// server's requests queueing for a connection while writers wait on row
// locks.
const MinPoolSize = 16

// retries bounds how often a transaction is run again.
const retries = 5

// DB is a PostgreSQL database as ctxkit uses it.
type DB struct {
	// Pool is the connection pool; use Read and Write for transactions.
	Pool *pgxpool.Pool
}

// Open connects to the database at url ("postgres://user:pass@host/db?…";
// search_path selects the schema) and checks that it answers. Its errors
// never hold the password (the caller names the URL with store.Redact).
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse the URL: %w", err) // pgx masks the password
	}
	if u, err := neturl.Parse(url); err == nil && !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, MinPoolSize)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	// JIT compilation pays off for long analytic queries, never for
	// ctxkit's short ones; a row estimate that is off (an id = ANY(array)
	// over a million statements) made PostgreSQL spend 400–700 ms
	// compiling a query that runs in 0.4 ms.
	if _, ok := cfg.ConnConfig.RuntimeParams["jit"]; !ok { // a URL may still set it
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "ctxkit"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Read runs fn in a read-only transaction, again when it failed in a way
// that changed nothing (a lost connection, a serialization failure).
func (db *DB) Read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return retry(ctx, true, func() error {
		return pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, fn)
	})
}

// Write runs fn in a read-write transaction (READ COMMITTED) and commits
// it, again when PostgreSQL rolled it back for a serialization failure or
// a deadlock, or when the connection failed before anything was sent; fn
// must therefore be safe to run again.
func (db *DB) Write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return retry(ctx, false, func() error {
		return pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{}, fn)
	})
}

// WriteSerializable is Write at the SERIALIZABLE isolation level.
func (db *DB) WriteSerializable(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return retry(ctx, false, func() error {
		return pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.Serializable}, fn)
	})
}

func retry(ctx context.Context, read bool, attempt func() error) error {
	delay := 5 * time.Millisecond
	for i := 0; ; i++ {
		err := attempt()
		if err == nil || i >= retries || ctx.Err() != nil || !Retryable(err, read) {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// Retryable reports whether a transaction that failed with err may be run
// again: PostgreSQL rolled it back (serialization failure, deadlock), or
// nothing reached the server, or — for a read only — the connection was
// lost.
func Retryable(err error, read bool) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return read
		}
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	if !read {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded)
}

// IsUniqueViolation reports whether err is PostgreSQL's unique_violation,
// optionally on the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}
