// Package sqlitestore is the default backend ([OpenBackend], the "sqlite"
// scheme and a bare path): the workspaces ([Store]) and the key-value store
// in one SQLite file, $CTXKIT_HOME/ctxkit.db, shared by every ctxkit
// process of a user; the vault registry in files (package fileregistry);
// each vault's index and episodes in SQLite files of its .ctxkit-vault
// folder (packages sqliteindex and sqliteepisodic). The MCP
// wrapper runs one process per wrapped server, and a result one of them
// stores must be explorable from another, so the file is where all state
// lives: nothing is cached in memory across calls.
//
// It uses modernc.org/sqlite, a pure-Go translation of SQLite, so the binary
// builds with CGO_ENABLED=0.
//
// # Concurrency
//
// The file is opened as every ctxkit SQLite database is (internal/sqlitedb):
// WAL, so readers never block the writer nor the writer them; every write an
// immediate transaction (BEGIN IMMEDIATE), which takes the write lock before
// it reads anything, so that a read-check-write such as Put's conflict check
// or DeleteItems' renumbering is serialised with every other writer in every
// process; all writes of a process through one connection, reads through a
// pool of query_only connections; and a transaction retried a bounded number
// of times with jittered backoff when SQLite reports the database busy
// where busy_timeout does not help. A read that needs several statements (a
// search, a scan) runs in one read transaction and sees one snapshot.
// Transactions have no effect outside the database, so a retry is safe.
//
// What is the store's own: 16 KiB pages, a writer page cache of 256 pages,
// and checkpoints. The connection that commits does not checkpoint the WAL
// (which would make the Put of a large list pay for copying it all into the
// database file again); a goroutine runs passive checkpoints on a read
// connection once enough has been written.
//
// # What is safe across processes
//
// Everything the store does. Each method is one transaction (DeleteExpired
// is one per workspace), so another process sees a Put, an append or a
// deletion whole or not at all. The schema is a list of migration steps
// keyed on PRAGMA user_version (internal/migrate): opening a current file
// takes no write lock, and processes opening a new or older file at once
// apply each step exactly once; a file whose version is newer than the
// code, or that is not a ctxkit store (PRAGMA application_id), is refused.
// Indexing a workspace after Put (below) is idempotent: whichever process
// takes the write lock first does it. The file must not be shared over a
// network file system, where SQLite's locks and WAL's shared memory do not
// work.
//
// # Schema
//
// workspaces holds one row of metadata per workspace, with indexes for List
// (by creation time, session and type) and for the expiry sweep (a partial
// index on expires_at). Its integer key is never reused (AUTOINCREMENT); a
// replaced workspace gets a new key. blobs holds a workspace's original
// bytes and a dict's object apart from the metadata that listing scans.
//
// items holds one row per list item: data is the item's JSON text, so
// json_extract(data, '$.a.b') can filter, sort and group in SQL. Its id is
// (workspace key << 32 | sequence number): a workspace's items are one id
// range, in list order, since appends take new, higher sequence numbers and
// deletions only remove. idx is the position, indexed with the workspace
// for paging, and renumbered by DeleteItems. Texts are cut into chunks of
// about 16k characters that end at white space; chunks holds them with
// their character offsets, so TextSlice reads only the chunks it returns.
//
// # Full-text index
//
// items_fts and chunks_fts are contentless FTS5 tables (contentless_delete=1,
// so rows can be deleted without their text; detail=none, since search
// needs only which rows hold a term). They do not tokenize text themselves:
// Go computes each row's index terms, the distinct terms of its text as
// SQLite's "porter unicode61" tokenizer makes them (internal/textsearch:
// folded to lower case, without diacritics, stemmed), each prefixed with
// the workspace's key. The ascii
// tokenizer then only splits them on spaces. This puts the linguistic work
// on every core instead of inside the single writer, makes Go code that
// locates matches agree with the index by construction, and keeps every
// workspace's terms apart: FTS5 evaluates a prefix query over the whole
// index, whatever rowid range is asked for, so without the prefix a search
// of a small workspace would read a large one's entries.
//
// Content up to 4 MB is indexed inside Put's transaction. Larger content is
// stored first and indexed by a background goroutine right after, or by the
// first search that needs it if that comes first (or if the process that
// stored it exited): indexing takes several times as long as storing, and
// many stored results are paged or filtered but never searched. Mutations keep the index exact, in their transaction,
// once a workspace is indexed.
//
// # Search
//
// Queries mean what internal/textsearch says, as on every backend. A
// plain-word term is a prefix query on its stem ("parse" finds "parser",
// "ecole" finds "École"); another term (C++, e-mail, x@example.com)
// matches by substring of the folded text, reading every item unless the
// term contains whole words the index can narrow the items to. Items rank
// as textsearch.Rank has it: by distinct terms matched, then by BM25 over
// the workspace's own statistics, then by position; only the items that
// can reach the requested places are read and scored. SearchText reads the
// chunks that may hold the most terms first and locates matches with the
// same tokenizer, grouping them into passages.
package sqlitestore
