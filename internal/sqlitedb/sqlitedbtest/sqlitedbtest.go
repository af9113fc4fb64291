// Package sqlitedbtest helps the tests of the SQLite stores: database files
// older code wrote, kept gzipped under testdata, another process's write
// lock, and opens of one new file at once.
package sqlitedbtest

import (
	"compress/gzip"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// Fixture unpacks the gzipped database file gz into a new temporary
// directory, as name, and returns its path.
func Fixture(tb testing.TB, gz, name string) string {
	tb.Helper()
	in, err := os.Open(gz)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		tb.Fatalf("%s: %v", gz, err)
	}
	path := filepath.Join(tb.TempDir(), name)
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		tb.Fatalf("%s: %v", gz, err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// HoldWriteLock takes the write lock of the database file at path (BEGIN
// IMMEDIATE) on a connection of its own, as another process would, and
// holds it until the test ends.
func HoldWriteLock(tb testing.TB, path string) {
	tb.Helper()
	// A plain file name, not a URI: the path is taken as it is.
	db, err := sql.Open("sqlite", path+"?_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	tx, err := db.BeginTx(tb.Context(), nil)
	if err != nil {
		db.Close()
		tb.Fatalf("take the write lock of %s: %v", path, err)
	}
	tb.Cleanup(func() {
		tx.Rollback()
		db.Close()
	})
}

// OpenConcurrently calls open from n goroutines at once, as n processes
// opening one new file would, and fails the test unless every open
// succeeds; each opened store is closed.
func OpenConcurrently(tb testing.TB, n int, open func() (io.Closer, error)) {
	tb.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := open()
			if err != nil {
				tb.Errorf("Open: %v", err)
				return
			}
			c.Close()
		})
	}
	wg.Wait()
}
