// Package sqlitestore is the default [store.Store]: one SQLite file,
// $CTXKIT_HOME/ctxkit.db, shared by every ctxkit process of a user. The MCP
// wrapper runs one process per wrapped server, and a result one of them
// stores must be explorable from another, so the file is the only place
// state lives: nothing is cached in memory across calls.
//
// It uses modernc.org/sqlite, a pure-Go translation of SQLite, so the binary
// builds with CGO_ENABLED=0.
//
// # Concurrency
//
// SQLite allows many readers and one writer. The database is in WAL mode, so
// readers never block the writer and the writer never blocks readers; what
// remains is writers contending with each other, within a process and
// across processes.
//
// Every write is an immediate transaction (BEGIN IMMEDIATE, through the
// driver's _txlock=immediate), which takes the write lock before it reads
// anything. A deferred transaction would take a read snapshot first and try
// to upgrade it to a write lock later; when another connection wrote in
// between, the upgrade fails at once with SQLITE_BUSY, and busy_timeout
// cannot help because waiting would not make the stale snapshot current.
// Measured under contention, deferred transactions lost a third to two
// thirds of their commits that way and immediate ones none. An immediate
// transaction instead waits, under busy_timeout, for the lock it needs, and
// then reads the latest data: a read-check-write sequence such as Put's
// conflict check or DeleteItems' renumbering is serialised with every other
// writer in every process.
//
// Within a process all writes go through one connection (a *sql.DB limited
// to one open connection), so goroutines queue in database/sql rather than
// spin on SQLite's file lock, and reads use a separate pool of query_only
// connections. Every pragma (busy_timeout, journal_mode=WAL,
// synchronous=NORMAL, foreign_keys) is set through the DSN, so each pooled
// connection gets it when it is opened. A read that needs several
// statements (a search, a scan) runs in one read transaction and so sees
// one snapshot.
//
// SQLITE_BUSY can still surface in rare cases busy_timeout does not cover
// (recovery of a WAL left by a crashed process, two processes creating the
// schema of a fresh file at once, a writer holding the lock longer than the
// timeout); the store then retries the whole transaction a bounded number
// of times with jittered backoff. Transactions are written so that a retry
// is safe: they have no effect outside the database. No "database is
// locked" reaches a caller unless the lock stays held through every retry.
//
// # What is safe across processes
//
// Everything the store does. Each method is one transaction (DeleteExpired
// is one per workspace), so another process sees a Put, an append or a
// deletion whole or not at all. Schema migrations run in immediate
// transactions keyed on PRAGMA user_version, so processes opening a fresh
// or older file at once apply each migration exactly once; a file whose
// version is newer than the code is refused. Processes must not share the
// file over a network file system, where SQLite's locking and WAL's shared
// memory do not work.
//
// # Schema
//
// workspaces holds one row of metadata per workspace, with indexes for List
// (by creation time, session and type) and for the expiry sweep (a partial
// index on expires_at). Its integer key is never reused (AUTOINCREMENT); a
// replaced workspace gets a new key. blobs holds a workspace's original
// bytes and a dict's object, apart from the metadata that listing scans.
//
// items holds one row per list item: data is the item's JSON text, so
// json_extract(data, '$.a.b') can filter, sort and group in SQL. Its id is
// (workspace key << 32 | sequence number): a workspace's items are one id
// range, and id order is list order, since appends take new, higher
// sequence numbers and deletions only remove. idx is the position, indexed
// with the workspace for paging, and renumbered by DeleteItems.
//
// items_fts is a contentless FTS5 index (contentless_delete=1, so rows can
// be deleted without their text) over every scalar value of each item,
// tokenized "porter unicode61 remove_diacritics 0", with the item's id as
// rowid. Texts are cut into chunks of about 16k characters that end at
// white space; chunks holds them with their character offset, and
// chunks_fts indexes them the same way.
//
// # Search
//
// A search term that is a plain word is a stemmed prefix query on the
// index; other terms (C++, e-mail, x@example.com) match by substring, the
// index narrowing the candidates when the term contains whole words. The
// store reads the candidates that can rank and computes BM25 itself with
// the workspace's own statistics, since FTS5's bm25() would use those of
// the whole table, where one large workspace skews every small one.
// SearchText reads the chunks that may hold the most terms first and
// locates matches with a Go mirror of the tokenizer and stemmer.
package sqlitestore
