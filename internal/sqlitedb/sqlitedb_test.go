package sqlitedb

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb/sqlitedbtest"
)

const testAppID = 0x74657374 // "test"

// testOptions has a schema whose first step fails if it runs twice (the
// table exists) and counts its runs.
func testOptions() Options {
	return Options{
		ApplicationID: testAppID,
		Schema: migrate.Schema[*sql.Tx]{Name: "test database", Steps: []migrate.Step[*sql.Tx]{
			Exec(`CREATE TABLE runs (step INTEGER NOT NULL); INSERT INTO runs VALUES (1)`),
			Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL); INSERT INTO runs VALUES (2)`),
		}},
	}
}

func openTest(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rawOpen opens path with no pragma but busy_timeout 0 and immediate
// transactions, as another process would.
func rawOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+escapeURIPath(path)+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// checkRuns checks that each step of testOptions ran exactly once.
func checkRuns(t *testing.T, db *DB) {
	t.Helper()
	var runs string
	if err := db.Reader().QueryRowContext(t.Context(), `SELECT group_concat(step, ',') FROM runs`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != "1,2" {
		t.Errorf("steps run: %s, want each once", runs)
	}
}

// TestOpenCurrentTakesNoWriteLock: with another connection holding the
// write lock of a database whose schema is current, Open succeeds (and
// reads work) while the lock is held.
func TestOpenCurrentTakesNoWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	openTest(t, path, testOptions()).Close()
	sqlitedbtest.HoldWriteLock(t, path)
	opts := testOptions()
	opts.BusyTimeout = 1 // a write lock needed would fail at once
	db := openTest(t, path, opts)
	checkRuns(t, db)
}

// TestOpenMarksAndMigrates follows a file from new to current: a new file
// gets every step and the mark, a file behind gets the missing steps.
func TestOpenMarksAndMigrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "db")
	opts := testOptions()
	opts.Schema.Steps = opts.Schema.Steps[:1]
	db := openTest(t, path, opts)
	var version, appID int
	if err := db.Reader().QueryRowContext(t.Context(), `SELECT (SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id)`).Scan(&version, &appID); err != nil {
		t.Fatal(err)
	}
	if version != 1 || appID != testAppID {
		t.Errorf("new file: user_version %d, application_id %#x", version, appID)
	}
	db.Close()
	checkRuns(t, openTest(t, path, testOptions()))
}

// TestOpenRefuses: a newer schema and a foreign file are refused, named in
// the error, and left as they were.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup string // run on a new file
		want  error
		says  string
	}{
		{"newer", `CREATE TABLE x (y); PRAGMA user_version = 9; PRAGMA application_id = 1952805748`, migrate.ErrNewer, "version 9, this ctxkit knows up to 2"},
		{"another application's", `CREATE TABLE x (y); PRAGMA user_version = 1; PRAGMA application_id = 7`, migrate.ErrForeign, "application_id 0x7"},
		{"unmarked tables", `CREATE TABLE x (y)`, migrate.ErrForeign, "1 schema objects"},
		{"unmarked version", `PRAGMA user_version = 1`, migrate.ErrForeign, "user_version 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			raw := rawOpen(t, path)
			if _, err := raw.ExecContext(t.Context(), tc.setup); err != nil {
				t.Fatal(err)
			}
			db, err := Open(t.Context(), path, testOptions())
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Open: %v, want %v saying %q", err, tc.want, tc.says)
			}
			var objects int
			if err := raw.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name IN ('runs', 'notes')`).Scan(&objects); err != nil || objects != 0 {
				t.Errorf("the refused file got the schema: %d tables, %v", objects, err)
			}
		})
	}
}

// TestOpenUnmarked: a file from before the marks, at a version the schema
// allows unmarked, is migrated and marked when it has the schema's tables,
// and refused when it has not.
func TestOpenUnmarked(t *testing.T) {
	opts := testOptions()
	opts.Schema.Unmarked = 1
	opts.Schema.Recognize = HasTables("runs")
	for _, tc := range []struct {
		setup string
		want  error
	}{
		{`CREATE TABLE runs (step INTEGER NOT NULL); INSERT INTO runs VALUES (1); PRAGMA user_version = 1`, nil},
		{`CREATE TABLE other (x); PRAGMA user_version = 1`, migrate.ErrForeign},
	} {
		path := filepath.Join(t.TempDir(), "db")
		if _, err := rawOpen(t, path).ExecContext(t.Context(), tc.setup); err != nil {
			t.Fatal(err)
		}
		db, err := Open(t.Context(), path, opts)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: Open: %v, want %v", tc.setup, err, tc.want)
		}
		if err != nil {
			continue
		}
		var appID int
		if err := db.Reader().QueryRowContext(t.Context(), `PRAGMA application_id`).Scan(&appID); err != nil || appID != testAppID {
			t.Errorf("application_id after: %#x, %v", appID, err)
		}
		checkRuns(t, db)
		db.Close()
	}
}

// TestConcurrentFirstOpens opens one new file from many goroutines, each
// with its own DB as separate processes would have: every open succeeds
// and the steps run once.
func TestConcurrentFirstOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	sqlitedbtest.OpenConcurrently(t, 8, func() (io.Closer, error) { return Open(t.Context(), path, testOptions()) })
	checkRuns(t, openTest(t, path, testOptions()))
}

// helperEnv tells a re-executed test binary to open the database it names,
// as one process of TestConcurrentFirstOpensProcesses.
const helperEnv = "CTXKIT_SQLITEDB_HELPER"

// TestConcurrentFirstOpensProcesses opens one new file from several
// processes at once.
func TestConcurrentFirstOpensProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "db")
	const procs = 4
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for i := range procs {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	for i := range procs {
		if errs[i] != nil || !strings.Contains(outs[i].String(), "--- PASS: TestHelperProcess") {
			t.Errorf("process %d: %v\n%s", i, errs[i], &outs[i])
		}
	}
	checkRuns(t, openTest(t, path, testOptions()))
}

// TestHelperProcess is one process of TestConcurrentFirstOpensProcesses.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("run by TestConcurrentFirstOpensProcesses")
	}
	db := openTest(t, path, testOptions())
	if err := db.Write(t.Context(), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(t.Context(), `INSERT INTO notes (body) VALUES (?)`, fmt.Sprint(os.Getpid()))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSettings checks the pragmas each pool's connections get.
func TestSettings(t *testing.T) {
	opts := testOptions()
	opts.PageSize = 16 << 10
	opts.WriterCache = 256
	opts.ReaderCache = -4096
	opts.CheckpointPages = -1
	opts.JournalSizeLimit = 1 << 20
	db := openTest(t, filepath.Join(t.TempDir(), "db"), opts)
	// A connection that opened the file while it was still empty learns
	// its page size and journal mode at its next read.
	checkRuns(t, db)
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{db.Reader(), "journal_mode", "wal"},
		{db.Reader(), "page_size", "16384"},
		{db.Reader(), "query_only", "1"},
		{db.Reader(), "foreign_keys", "1"},
		{db.Reader(), "busy_timeout", "10000"},
		{db.Reader(), "cache_size", "-4096"},
		{db.Writer(), "query_only", "0"},
		{db.Writer(), "foreign_keys", "1"},
		{db.Writer(), "cache_size", "256"},
		{db.Writer(), "wal_autocheckpoint", "0"},
		{db.Writer(), "journal_size_limit", "1048576"},
		{db.Writer(), "synchronous", "1"}, // NORMAL
		{db.Writer(), "busy_timeout", "10000"},
	} {
		var got string
		if err := tc.db.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
	// A write through a read connection is refused.
	if _, err := db.Reader().ExecContext(t.Context(), `INSERT INTO notes (body) VALUES ('x')`); err == nil {
		t.Error("a read connection wrote")
	}
}

// TestRegister: a function registered for one database reaches both its
// pools and no other database.
func TestRegister(t *testing.T) {
	opts := testOptions()
	opts.Register = func(d *sqlite.Driver) error {
		return d.RegisterScalarFunction("twice", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			return args[0].(int64) * 2, nil
		})
	}
	db := openTest(t, filepath.Join(t.TempDir(), "db"), opts)
	for _, p := range []*sql.DB{db.Writer(), db.Reader()} {
		var n int
		if err := p.QueryRowContext(t.Context(), `SELECT twice(21)`).Scan(&n); err != nil || n != 42 {
			t.Errorf("twice(21) = %d, %v", n, err)
		}
	}
	other := openTest(t, filepath.Join(t.TempDir(), "db"), testOptions())
	if err := other.Reader().QueryRowContext(t.Context(), `SELECT twice(1)`).Scan(new(int)); err == nil {
		t.Error("another database has the function")
	}
}

// TestPathWithURISyntax checks that a path with URI syntax in it names
// that very file.
func TestPathWithURISyntax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d", "x y?.db")
	openTest(t, path, testOptions()).Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database at %q: %v, %v", path, fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory of %q: %v, %v", path, fi, err)
	}
}

// FuzzEscapeURIPath: SQLite decodes a file: URI's path as net/url does and
// ends it at '?' or '#'; the escaped path must decode to the path and
// hold neither.
func FuzzEscapeURIPath(f *testing.F) {
	for _, s := range []string{"/tmp/a b/c.db", "/a?b#c%20d", "%", "/ü/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		e := escapeURIPath(p)
		if strings.ContainsAny(e, "?#") {
			t.Fatalf("escaped %q holds ? or #: %q", p, e)
		}
		if got, err := url.PathUnescape(e); err != nil || got != p {
			t.Fatalf("escaped %q decodes to %q, %v", p, got, err)
		}
	})
}

// TestWriteAndRead: Write commits fn's changes, rolls back on its error;
// Read sees one snapshot.
func TestWriteAndRead(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) *DB{
		"file": func(t *testing.T) *DB { return openTest(t, filepath.Join(t.TempDir(), "db"), testOptions()) },
		"memory": func(t *testing.T) *DB {
			db, err := OpenMemory(t.Context(), testOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := t.Context()
			insert := func(body string) func(tx *sql.Tx) error {
				return func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO notes (body) VALUES (?)`, body)
					return err
				}
			}
			if err := db.Write(ctx, insert("kept")); err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			if err := db.Write(ctx, func(tx *sql.Tx) error { insert("dropped")(tx); return boom }); err != boom {
				t.Fatalf("Write: %v, want boom", err)
			}
			var bodies string
			err := db.Read(ctx, func(tx *sql.Tx) error {
				return tx.QueryRowContext(ctx, `SELECT group_concat(body) FROM notes`).Scan(&bodies)
			})
			if err != nil || bodies != "kept" {
				t.Errorf("notes: %q, %v", bodies, err)
			}
			checkRuns(t, db)
		})
	}
}

// TestMemoryDatabasesAreSeparate: each OpenMemory is a database of its
// own, shared by its writer and its readers, and concurrent writers and
// readers of it all succeed.
func TestMemoryDatabasesAreSeparate(t *testing.T) {
	ctx := t.Context()
	a, err := OpenMemory(ctx, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenMemory(ctx, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				err := a.Write(ctx, func(tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO notes (body) VALUES (?)`, fmt.Sprint(i, j))
					return err
				})
				if err != nil {
					t.Errorf("write: %v", err)
					return
				}
				var n int
				if err := a.Read(ctx, func(tx *sql.Tx) error {
					return tx.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n)
				}); err != nil || n == 0 {
					t.Errorf("read after a write: %d notes, %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for db, want := range map[*DB]int{a: 160, b: 0} {
		var n int
		if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil || n != want {
			t.Errorf("notes: %d, %v; want %d", n, err, want)
		}
	}
}
