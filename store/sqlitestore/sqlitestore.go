package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/internal/sqlitebusy"
	"github.com/ctxkit/ctxkit/store"
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// BusyTimeout is how long one statement waits for a lock held by another
	// process before SQLite gives up with SQLITE_BUSY (which the store then
	// retries a few times). Zero means 10 seconds.
	BusyTimeout time.Duration
	// ReadConns bounds the pool of read-only connections. Zero means 4.
	ReadConns int
	// NoBackgroundIndex leaves the search index of large content to the
	// first search that needs it, instead of a goroutine started by Put.
	// Short-lived processes (a CLI command) set it so that Close does not
	// wait for indexing they would abandon anyway.
	NoBackgroundIndex bool

	// chunkRunes and indexInline override the text chunk size and the
	// inline indexing threshold (-1 for none), and pipeMode how Pipe runs a
	// pipeline, for tests.
	chunkRunes  int
	indexInline int
	pipeMode    pipeMode
}

// Defaults and bounds.
const (
	defaultBusyTimeout = 10 * time.Second
	defaultReadConns   = 4
	// writerCachePages is the page cache of the writer connection, in
	// pages (4 MiB at pageSize). Put appends rows in id order, so it keeps
	// few pages hot: the cache mostly holds the transaction's dirty pages
	// until SQLite spills them to the WAL, and each costs about 20 KiB of
	// resident memory. A 32 MiB cache added 40 MB to the peak RSS of a
	// 50 MB Put, and neither Put nor building the search index of 100,000
	// items ran measurably faster with it. The size is a page count, not
	// KiB: SQLite turns a size in KiB into pages with the page size the
	// connection has at that moment, which on a new file is still the
	// 4 KiB default, so -32768 KiB became a 128 MiB cache of 16 KiB pages.
	writerCachePages = 256
	// pageSize is the page size of a new database. Items are a few hundred
	// bytes and text chunks tens of kilobytes; larger pages than SQLite's
	// default 4 KiB mean fewer overflow pages and fewer writes.
	pageSize = 16 << 10
)

// Store is a [store.Store] kept in one SQLite file. It is safe for concurrent
// use by many goroutines, and several processes may open the same file.
type Store struct {
	path       string
	w          *sql.DB // the one writer connection; every write transaction is immediate
	r          *sql.DB // read-only connections
	wst, rst   stmts   // statements prepared on w and r
	staged     *stager
	indexer    *indexer
	ckpt       *checkpointer
	chunkRunes int
	// indexInline is the content size, in bytes, up to which Put indexes
	// content in its own transaction.
	indexInline int
	pipeMode    pipeMode // how Pipe runs a pipeline
}

var _ store.Store = (*Store)(nil)

// Open opens the store in the SQLite file at path, creating the file (mode
// 0600) and its directory (mode 0700) when they are missing, and brings its
// schema up to date. It refuses a file whose schema is newer than this code
// knows, or that is not a ctxkit store.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlitestore: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: resolve %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: create directory of %q: %w", abs, err)
	}
	// Create the file ourselves so that it gets mode 0600; SQLite gives its
	// WAL and shared-memory files the same mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %q: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlitestore: close %q: %w", abs, err)
	}

	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	readConns := opts.ReadConns
	if readConns <= 0 {
		readConns = defaultReadConns
	}
	s := &Store{path: abs, chunkRunes: opts.chunkRunes, indexInline: opts.indexInline, pipeMode: opts.pipeMode}
	if s.chunkRunes <= 0 {
		s.chunkRunes = defaultChunkRunes
	}
	switch {
	case s.indexInline == 0:
		s.indexInline = defaultIndexInline
	case s.indexInline < 0:
		s.indexInline = 0
	}

	// Each Store has its own driver so that the SQL function it registers
	// reaches only its own connections.
	s.staged = &stager{}
	d := &sqlite.Driver{}
	if err := d.RegisterScalarFunction("ctxkit_staged", 1, s.staged.fn); err != nil {
		return nil, fmt.Errorf("sqlitestore: register ctxkit_staged: %w", err)
	}
	// The driver runs busy_timeout first, then the _pragma values, then the
	// shorthand keys such as _journal_mode: page_size must precede the
	// switch to WAL to take effect on a new file (on an existing one it is
	// a no-op).
	base := "file:" + escapeURIPath(abs) + "?" + fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busy.Milliseconds())
	s.w = sql.OpenDB(connector{d: d, dsn: base +
		fmt.Sprintf("&_pragma=page_size(%d)&_pragma=cache_size(%d)", pageSize, writerCachePages) +
		fmt.Sprintf("&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(%d)", walSizeLimit) +
		"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"})
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.r = sql.OpenDB(connector{d: d, dsn: base + "&_query_only=1"})
	s.r.SetMaxOpenConns(readConns)
	s.r.SetMaxIdleConns(readConns)

	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", abs, err)
	}
	if s.wst, err = prepareAll(ctx, s.w, writeQueries); err == nil {
		s.rst, err = prepareAll(ctx, s.r, readQueries)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", abs, err)
	}
	s.ckpt = newCheckpointer(s.r)
	if !opts.NoBackgroundIndex {
		s.indexer = newIndexer(s)
	}
	return s, nil
}

// Close releases the store's connections.
func (s *Store) Close() error {
	if s.indexer != nil {
		s.indexer.close()
	}
	if s.ckpt != nil {
		s.ckpt.close()
	}
	return errors.Join(s.rst.close(), s.wst.close(), s.r.Close(), s.w.Close())
}

// connector opens connections of one DSN through a Store's own driver.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// escapeURIPath escapes the characters that would end or corrupt the path of
// a file: URI; SQLite decodes %XX escapes in it.
func escapeURIPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// errNewerSchema is returned by Open for a database a newer ctxkit wrote.
var errNewerSchema = errors.New("database schema is newer than this version of ctxkit")

// migrate brings the schema up to date, one immediate transaction per
// migration. Two processes opening a fresh file at once serialise on the
// write lock; the second finds each migration applied and skips it.
func (s *Store) migrate(ctx context.Context) error {
	for i, m := range migrations {
		target := i + 1
		err := s.write(ctx, func(t *txn) error {
			tx := t.tx
			var version, appID int
			if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
				return err
			}
			if version > len(migrations) {
				return fmt.Errorf("%w: version %d, this code knows up to %d", errNewerSchema, version, len(migrations))
			}
			if version >= target {
				if appID != applicationID {
					return fmt.Errorf("not a ctxkit database (application_id %#x)", appID)
				}
				return nil
			}
			if version == 0 {
				var tables int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&tables); err != nil {
					return err
				}
				if tables > 0 || appID != 0 {
					return fmt.Errorf("not a ctxkit database (application_id %#x, %d schema objects)", appID, tables)
				}
			}
			if _, err := tx.ExecContext(ctx, m); err != nil {
				return fmt.Errorf("migration %d: %w", target, err)
			}
			// PRAGMA takes no parameters; both values are integers we own.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d; PRAGMA application_id = %d`, target, applicationID)); err != nil {
				return fmt.Errorf("migration %d: %w", target, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// write runs fn in an immediate transaction on the writer connection and
// commits it, retrying the whole transaction when SQLite reports the
// database busy past busy_timeout. fn must have no effects outside tx.
func (s *Store) write(ctx context.Context, fn func(t *txn) error) error {
	return sqlitebusy.Retry(ctx, func() error {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		t := &txn{ctx: ctx, tx: tx, stmts: s.wst}
		if err := fn(t); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if s.ckpt != nil {
			s.ckpt.wrote(t.wrote)
		}
		return nil
	})
}

// read runs fn in a read transaction, which sees one snapshot of the
// database, retrying when SQLite reports the database busy (as it can while
// another process recovers the WAL).
func (s *Store) read(ctx context.Context, fn func(t *txn) error) error {
	return sqlitebusy.Retry(ctx, func() error {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return fn(&txn{ctx: ctx, tx: tx, stmts: s.rst})
	})
}
