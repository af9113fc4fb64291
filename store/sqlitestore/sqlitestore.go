package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"

	"github.com/ctxkit/ctxkit/internal/sqlitedb"
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
	db         *sqlitedb.DB
	w          *sql.DB        // the one writer connection; every write transaction is immediate
	r          *sql.DB        // read-only connections
	wst, rst   sqlitedb.Stmts // statements prepared on w and r
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
// knows (migrate.ErrNewer), or that is not a ctxkit store
// (migrate.ErrForeign).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	s := &Store{chunkRunes: opts.chunkRunes, indexInline: opts.indexInline, staged: &stager{}, pipeMode: opts.pipeMode}
	if s.chunkRunes <= 0 {
		s.chunkRunes = defaultChunkRunes
	}
	switch {
	case s.indexInline == 0:
		s.indexInline = defaultIndexInline
	case s.indexInline < 0:
		s.indexInline = 0
	}
	var err error
	s.path = path
	s.db, err = sqlitedb.Open(ctx, path, sqlitedb.Options{
		Schema:           schema,
		ApplicationID:    applicationID,
		BusyTimeout:      opts.BusyTimeout,
		ReadConns:        opts.ReadConns,
		PageSize:         pageSize,
		WriterCache:      writerCachePages,
		CheckpointPages:  -1, // see checkpoint.go
		JournalSizeLimit: walSizeLimit,
		Register: func(d *sqlite.Driver) error {
			return d.RegisterScalarFunction("ctxkit_staged", 1, s.staged.fn)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	s.w, s.r = s.db.Writer(), s.db.Reader()
	if s.wst, err = sqlitedb.Prepare(ctx, s.w, writeQueries...); err == nil {
		s.rst, err = sqlitedb.Prepare(ctx, s.r, readQueries...)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", s.path, err)
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
	return errors.Join(s.rst.Close(), s.wst.Close(), s.db.Close())
}

// write runs fn in an immediate transaction on the writer connection and
// commits it, retrying the whole transaction when SQLite reports the
// database busy past busy_timeout. fn must have no effects outside tx.
func (s *Store) write(ctx context.Context, fn func(t *txn) error) error {
	var wrote int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		t := &txn{ctx: ctx, tx: tx, stmts: s.wst}
		err := fn(t)
		wrote = t.wrote
		return err
	})
	if err == nil && s.ckpt != nil {
		s.ckpt.wrote(wrote)
	}
	return err
}

// read runs fn in a read transaction, which sees one snapshot of the
// database, retrying when SQLite reports the database busy (as it can while
// another process recovers the WAL).
func (s *Store) read(ctx context.Context, fn func(t *txn) error) error {
	return s.db.Read(ctx, func(tx *sql.Tx) error {
		return fn(&txn{ctx: ctx, tx: tx, stmts: s.rst})
	})
}
