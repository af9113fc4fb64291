package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestRetry: a write that meets another connection's exclusive lock fails
// with SQLITE_BUSY at once (busy_timeout 0); Retry keeps trying until the
// lock is released, gives up on other errors at once, and stops when the
// context ends.
func TestRetry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, writer := open(), open()
	ctx := context.Background()
	if _, err := holder.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	lock, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	write := func() error { _, err := writer.ExecContext(ctx, "INSERT INTO t VALUES (2)"); return err }
	if err := write(); !IsBusy(err) {
		t.Fatalf("write under a lock: %v, want SQLITE_BUSY", err)
	}

	tries := 0
	err = Retry(ctx, func() error {
		tries++
		if tries == 3 {
			if err := lock.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		return write()
	})
	if err != nil || tries != 3 {
		t.Errorf("Retry: %v after %d tries, want success at the third", err, tries)
	}

	other := errors.New("not busy")
	tries = 0
	if err := Retry(ctx, func() error { tries++; return other }); err != other || tries != 1 {
		t.Errorf("other error: %v after %d tries", err, tries)
	}

	lock, err = holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, "INSERT INTO t VALUES (3)"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	tries = 0
	err = Retry(cctx, func() error {
		tries++
		if tries == 2 {
			cancel()
		}
		return write()
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "SQLITE_BUSY") || tries != 2 {
		t.Errorf("cancelled: %v after %d tries, want the cancellation naming the busy error", err, tries)
	}
	if IsBusy(nil) || IsBusy(other) {
		t.Errorf("IsBusy of a non-SQLite error")
	}
}
