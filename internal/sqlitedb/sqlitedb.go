// Package sqlitedb opens a SQLite database (modernc.org/sqlite, pure Go) the
// one way every ctxkit store does: one writer connection whose transactions
// are all immediate, a pool of read-only connections, the pragmas they share
// set through the DSN, the schema brought up to date by [migrate], and
// transactions retried while SQLite reports the database busy.
//
// # Files
//
// A file is in WAL mode (readers never block the writer, nor the writer
// them) with synchronous=NORMAL, busy_timeout and foreign keys on. Every
// write transaction is immediate (BEGIN IMMEDIATE): it takes the write lock
// before it reads anything, so a read-check-write is serialised with every
// other writer in every process, and waiting for the lock is covered by
// busy_timeout; a deferred transaction would instead fail at once with
// SQLITE_BUSY when another connection wrote between its read and its
// write (measured under contention on the offload store, deferred
// transactions lost a third to two thirds of their commits that way,
// immediate ones none). Within a process the writes go through one
// connection, so goroutines queue in database/sql rather than spin on
// SQLite's lock. The read-only connections (query_only) serve reads; a read
// that needs several statements runs in one read transaction and sees one
// snapshot.
//
// Opening a database whose schema is current takes no write lock: the
// schema version is read on a read connection, and only a database that is
// new or behind is migrated, in an immediate transaction that reads the
// version again (see [migrate]). Each file is marked with its store's
// PRAGMA application_id, so a store refuses another application's file, or
// another store's.
//
// # In memory
//
// [OpenMemory] opens a database that lives in memory, with no file, for as
// long as the handle is open: SQLite's memdb VFS under a random name, shared
// by the writer and the readers of that one handle and by nothing else. It
// has no WAL: a write transaction keeps new readers out from its BEGIN to
// its end, and waits for the readers already in to finish before it commits
// (all under busy_timeout). A goroutine that holds a read open (an
// unfinished *sql.Rows) must therefore neither write nor start another read
// of the same database, or it waits out busy_timeout; on a file, WAL makes
// both harmless.
package sqlitedb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/internal/migrate"
)

// Options is how a store's database differs from the others'. Schema and
// ApplicationID are required; the zero value of every other field is a
// sensible default.
type Options struct {
	// Schema is the store's schema, as migration steps.
	Schema migrate.Schema[*sql.Tx]
	// ApplicationID marks the store's files (PRAGMA application_id); it
	// must not be zero.
	ApplicationID int32

	// BusyTimeout is how long one statement waits for a lock held by
	// another connection before SQLite gives up with SQLITE_BUSY (which
	// Write and Read then retry a few times). Zero means 10 seconds.
	BusyTimeout time.Duration
	// ReadConns bounds the pool of read-only connections. Zero means 4.
	ReadConns int
	// PageSize is the page size of a new database, in bytes. Zero means
	// SQLite's default (4096).
	PageSize int
	// WriterCache and ReaderCache are the page cache of the writer
	// connection and of each read connection, as PRAGMA cache_size takes
	// it: a positive number of pages or a negative number of KiB. Zero
	// means SQLite's default (2,000 KiB). A size in KiB is turned into
	// pages with the page size the connection has when it opens, which on
	// a new file is still the default.
	WriterCache, ReaderCache int
	// CheckpointPages is the WAL size, in pages, past which the connection
	// that commits copies the WAL back into the database (PRAGMA
	// wal_autocheckpoint). Zero means SQLite's default (1,000); a negative
	// value means never: the store checkpoints by itself (PRAGMA
	// wal_checkpoint), and otherwise the WAL is checkpointed when the last
	// connection to the file closes.
	CheckpointPages int
	// JournalSizeLimit is the size, in bytes, the WAL file is truncated to
	// when it is restarted after a checkpoint. Zero means no limit.
	JournalSizeLimit int64
	// Register, when set, is called with the driver of this database's
	// connections, which no other database shares, before any of them
	// opens: to register SQL functions (sqlite.Driver's
	// RegisterScalarFunction and the like) or connection hooks.
	Register func(d *sqlite.Driver) error
}

// Defaults.
const (
	defaultBusyTimeout = 10 * time.Second
	defaultReadConns   = 4
)

// DB is an open SQLite database: one writer connection and a pool of
// read-only ones. It is safe for concurrent use.
type DB struct {
	w, r *sql.DB
	// keep holds an in-memory database: it lives as long as a connection
	// to it is open, whatever the pools close.
	keep driver.Conn
	// readTurns has a place per read connection (see ReadTurn).
	readTurns chan struct{}
}

// Open opens the database in the file at path, creating the file (mode
// 0600) and its directory (mode 0700) when they are missing, and brings its
// schema up to date.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("create the directory: %w", err)
	}
	// Create the file here so that it gets mode 0600; SQLite gives its WAL
	// and shared-memory files the same mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return open(ctx, "file:"+escapeURIPath(abs)+"?", false, opts)
}

// OpenMemory opens a new, empty database in memory (see the package
// documentation), with its schema created. It is gone when the DB is
// closed. Options about files (PageSize, CheckpointPages,
// JournalSizeLimit) are ignored.
func OpenMemory(ctx context.Context, opts Options) (*DB, error) {
	return open(ctx, "file:/ctxkit-"+rand.Text()+"?vfs=memdb&", true, opts)
}

func open(ctx context.Context, uri string, memory bool, opts Options) (*DB, error) {
	if opts.ApplicationID == 0 {
		return nil, errors.New("no application id")
	}
	// Each database has its own driver, so that what Register adds
	// reaches only its own connections.
	d := &sqlite.Driver{}
	if opts.Register != nil {
		if err := opts.Register(d); err != nil {
			return nil, fmt.Errorf("register: %w", err)
		}
	}
	readers := opts.ReadConns
	if readers <= 0 {
		readers = defaultReadConns
	}
	db := &DB{readTurns: make(chan struct{}, readers)}
	if memory {
		var err error
		if db.keep, err = d.Open(opts.dsn(uri, true, false)); err != nil {
			return nil, fmt.Errorf("create the database: %w", err)
		}
	}
	db.w = sql.OpenDB(connector{d: d, dsn: opts.dsn(uri, memory, true)})
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.r = sql.OpenDB(connector{d: d, dsn: opts.dsn(uri, memory, false)})
	db.r.SetMaxOpenConns(readers)
	db.r.SetMaxIdleConns(readers)
	e := engine{db: db, appID: opts.ApplicationID}
	if err := Retry(ctx, func() error { return migrate.Run(ctx, e, opts.Schema) }); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// dsn returns the data source name of the writer's or the readers'
// connections. The driver runs busy_timeout first, then the _pragma values,
// then the shorthand keys such as _journal_mode and, last, _query_only:
// page_size thus precedes the switch to WAL, as it must to take effect on a
// new file (on an existing one it does nothing). Only the writer switches
// to WAL, so that a reader opening a new file first does not fix its page
// size.
func (o *Options) dsn(uri string, memory, writer bool) string {
	busy := o.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	var b strings.Builder
	b.WriteString(uri)
	fmt.Fprintf(&b, "_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busy.Milliseconds())
	cache := o.ReaderCache
	if writer {
		cache = o.WriterCache
	}
	if cache != 0 {
		fmt.Fprintf(&b, "&_pragma=cache_size(%d)", cache)
	}
	if !writer {
		b.WriteString("&_query_only=1")
		return b.String()
	}
	b.WriteString("&_txlock=immediate")
	if memory {
		return b.String()
	}
	if o.PageSize > 0 {
		fmt.Fprintf(&b, "&_pragma=page_size(%d)", o.PageSize)
	}
	if o.CheckpointPages != 0 {
		fmt.Fprintf(&b, "&_pragma=wal_autocheckpoint(%d)", max(o.CheckpointPages, 0))
	}
	if o.JournalSizeLimit > 0 {
		fmt.Fprintf(&b, "&_pragma=journal_size_limit(%d)", o.JournalSizeLimit)
	}
	b.WriteString("&_journal_mode=WAL&_synchronous=NORMAL")
	return b.String()
}

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

// connector opens connections of one DSN through a database's own driver.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

// Writer returns the pool of the one writer connection, whose transactions
// are immediate. A caller that holds its connection (a transaction, or
// unfinished rows) and asks it for another waits forever.
func (db *DB) Writer() *sql.DB { return db.w }

// Reader returns the pool of read-only connections.
func (db *DB) Reader() *sql.DB { return db.r }

// Write runs fn in an immediate transaction and commits it, running it
// again while SQLite reports the database busy (see [Retry]): fn must have
// no effect outside tx.
func (db *DB) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return Retry(ctx, func() error { return db.write(ctx, fn) })
}

// Read runs fn in a read transaction, which sees one snapshot of the
// database, running it again while SQLite reports the database busy (as it
// can while another process recovers the WAL): fn must have no effect
// outside tx.
func (db *DB) Read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return Retry(ctx, func() error { return db.read(ctx, fn) })
}

func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ReadTurn waits for a read connection to be free, in the order callers
// came, and returns the function that frees it; Read takes its turn
// itself. database/sql hands a freed connection to a random waiter, which
// under load left some readers waiting many turns: with turns, the p99 of
// an episode write (whose hints are read) fell from 170 to 121 ms in
// bench/servebench.
func (db *DB) ReadTurn(ctx context.Context) (func(), error) {
	select {
	case db.readTurns <- struct{}{}:
		return func() { <-db.readTurns }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (db *DB) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	done, err := db.ReadTurn(ctx)
	if err != nil {
		return err
	}
	defer done()
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// Close closes the connections; an in-memory database is gone after it.
func (db *DB) Close() error {
	errs := []error{db.r.Close(), db.w.Close()}
	if db.keep != nil {
		errs = append(errs, db.keep.Close())
	}
	return errors.Join(errs...)
}
