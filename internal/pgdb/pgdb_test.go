package pgdb_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
)

// TestMigrateOnceConcurrently starts eight pools on one new schema at
// once: every migration succeeds and each step ran exactly once (a step
// that ran twice would fail on CREATE TABLE, and the counter says so).
func TestMigrateOnceConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	steps := []migrate.Step[pgx.Tx]{
		pgdb.Exec(`CREATE TABLE runs (step int); INSERT INTO runs VALUES (1)`),
		pgdb.Exec(`CREATE TABLE two (x int); INSERT INTO runs VALUES (2)`),
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		db := pgtest.Open(t, url)
		wg.Go(func() { errs[i] = pgdb.Migrate(t.Context(), db, "test", steps...) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db := pgtest.Open(t, url)
	var n int
	if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM runs`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("steps ran %d times in all (err %v), want 2", n, err)
	}
	// A newer schema than the code is refused.
	err := pgdb.Migrate(t.Context(), db, "test", steps[:1]...)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("older code on a newer schema: %v", err)
	}
}

// TestOpenDownNamesURLWithoutPassword: a server that does not answer gives
// an error that does not hold the password.
func TestOpenDownNamesURLWithoutPassword(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := pgdb.Open(ctx, "postgres://ctxkit:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("no error from a port nothing listens on")
	}
	if msg := err.Error(); strings.Contains(msg, "hunter2") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("error %q: want the cause, without the password", msg)
	}
}

// kill terminates the server process of a connection from another one, as
// a restart or a network cut would.
func kill(t *testing.T, db *pgdb.DB, pid uint32) {
	t.Helper()
	if _, err := db.Pool.Exec(t.Context(), `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
}

// TestLostConnection: a read whose connection is lost midway is run again
// and answers; a write whose connection is lost after it was sent is
// reported, not run again, and not committed.
func TestLostConnection(t *testing.T) {
	url := pgtest.URL(t)
	db, other := pgtest.Open(t, url), pgtest.Open(t, url)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE t (x int)`); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	var n int
	err := db.Read(t.Context(), func(tx pgx.Tx) error {
		attempts++
		if attempts == 1 {
			kill(t, other, tx.Conn().PgConn().PID())
		}
		return tx.QueryRow(t.Context(), `SELECT count(*) FROM t`).Scan(&n)
	})
	if err != nil || attempts != 2 {
		t.Errorf("read over a lost connection: %v after %d attempts, want an answer at the second", err, attempts)
	}

	attempts = 0
	err = db.Write(t.Context(), func(tx pgx.Tx) error {
		attempts++
		if _, err := tx.Exec(t.Context(), `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		kill(t, other, tx.Conn().PgConn().PID())
		_, err := tx.Exec(t.Context(), `INSERT INTO t VALUES (2)`)
		return err
	})
	if err == nil || attempts != 1 {
		t.Errorf("write over a lost connection: %v after %d attempts, want an error at the first", err, attempts)
	}
	if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows after the lost write: %d (%v), want 0", n, err)
	}
}

// TestJITOff: ctxkit's connections run without JIT compilation, which cost
// 400–700 ms per query over a million episodes (a misestimated plan got
// compiled) for queries that run in under a millisecond; a URL may still
// turn it on.
func TestJITOff(t *testing.T) {
	url := pgtest.URL(t)
	for _, tc := range []struct{ url, want string }{{url, "off"}, {url + "&jit=on", "on"}} {
		var jit string
		if err := pgtest.Open(t, tc.url).Pool.QueryRow(t.Context(), `SHOW jit`).Scan(&jit); err != nil || jit != tc.want {
			t.Errorf("%s: jit is %q (%v), want %q", tc.url, jit, err, tc.want)
		}
	}
}
