// Package pgstore keeps ctxkit's offload workspaces ([Store], a
// [store.Store]) and its key-value store ([KV], a [store.KV]) in a
// PostgreSQL database (package internal/pgdb), shared by every ctxkit
// process that uses it. The pool and the schema belong to the backend:
// [Migrate] brings the tables up to date once per process, and [NewStore]
// and [NewKV] are cheap handles on the pool.
//
// # Schema
//
// ws_workspaces holds one row of metadata per workspace, with indexes for
// listing (by creation time, session and type) and for the expiry sweep.
// Content lives in tables keyed by the workspace's key: ws_raw (the
// original bytes, in pieces of 1 MiB), ws_values (a dict's object),
// ws_items (one row per list item: its JSON as given, its sequence number,
// which orders the list, and its position, which DeleteItems renumbers),
// and ws_chunks (a text in chunks of about 16k characters ending at white
// space, with their character offsets, so that TextSlice reads only the
// chunks it returns). Item JSON, text and raw bytes are bytea: they may
// hold NUL or bytes that are not UTF-8, which text columns refuse.
//
// # Search
//
// Queries mean and rank what they do in sqlitestore (internal/textsearch).
// Each item's and each chunk's index terms (its distinct stems, as FTS5's
// "porter unicode61" tokenizer makes them) are rows of ws_item_terms and
// ws_chunk_terms, B-trees on (workspace, term, row). A plain query word
// matches the terms starting with its stem: one range scan. Another term
// (C++, e-mail) matches by substring of the folded text, in the rows that
// hold all of its inner terms when it has some, in every row otherwise.
// Ranking is textsearch.Rank over the workspace's own statistics for
// items, and the IDF of chunks for passages, computed in Go exactly as
// sqlitestore computes them.
//
// The terms are written by Put in its own transaction (sqlitestore
// defers indexing large content): a list's Put sends its items and a row
// per distinct term of each item (17 per item in storetest.Bench's
// items) with COPY, the terms sorted in the B-tree's order, and costs
// several times what the items alone would. A mutation replaces its
// items' terms in its transaction, finding the old ones by computing them
// again from the old items, so that the term tables need no index by
// item; a change to how terms are computed therefore needs a migration
// step that rebuilds them.
//
// # Concurrency
//
// Each method is one transaction (DeleteExpired is one per workspace), so
// another process sees a Put, an append or a deletion whole or not at
// all. Every write to a workspace locks its row (SELECT … FOR UPDATE)
// before it reads anything, so that Put's conflict check, AppendItems'
// sequence numbers and DeleteItems' renumbering are serialised across
// processes. Puts of one id also queue on an advisory transaction lock of
// the id, so that one never finds the row it waited for replaced: Put
// replacing a workspace deletes the locked row and inserts one with a new
// key. Reads are read-only REPEATABLE
// READ transactions: a search or a scan of several statements sees one
// snapshot. ScanItems reads keyset pages in one such transaction and
// never holds the list in memory.
package pgstore
