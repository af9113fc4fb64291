package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Stmts are statements prepared once on a pool (the writer or the
// readers), for its transactions: preparing a statement costs about as much
// as running a small one, and a store runs the same few many times. They
// are prepared up front because the writer pool has a single connection:
// preparing on it from inside a transaction would wait forever for the
// connection the transaction holds. database/sql prepares a statement again
// on each connection of the pool the first time that connection runs it,
// and keeps it there; SQLite prepares it again by itself after a schema
// change.
type Stmts map[string]*sql.Stmt

// Prepare prepares queries on pool.
func Prepare(ctx context.Context, pool *sql.DB, queries ...string) (Stmts, error) {
	m := make(Stmts, len(queries))
	for _, q := range queries {
		if _, ok := m[q]; ok {
			continue
		}
		st, err := pool.PrepareContext(ctx, q)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		m[q] = st
	}
	return m, nil
}

// In returns the statement of q bound to tx, a transaction of the pool m
// was prepared on; nil when q was not prepared.
func (m Stmts) In(ctx context.Context, tx *sql.Tx, q string) *sql.Stmt {
	if st, ok := m[q]; ok {
		return tx.StmtContext(ctx, st)
	}
	return nil
}

// Exec runs q in tx, prepared when m holds it.
func (m Stmts) Exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st := m.In(ctx, tx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, q, args...)
}

// QueryRow runs q in tx for one row, prepared when m holds it.
func (m Stmts) QueryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st := m.In(ctx, tx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, q, args...)
}

// Query runs q in tx, prepared when m holds it.
func (m Stmts) Query(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	if st := m.In(ctx, tx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, q, args...)
}

// Close closes the statements.
func (m Stmts) Close() error {
	var errs []error
	for _, st := range m {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}
