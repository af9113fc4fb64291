package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/pgdb"
)

// Migrate brings the tables of the workspaces (component "workspaces")
// and of the key-value store (component "kv") up to date in db's schema.
// It runs once per process, before NewStore or NewKV; processes starting
// together apply each step once (pgdb.Migrate).
func Migrate(ctx context.Context, db *pgdb.DB) error {
	if err := pgdb.Migrate(ctx, db, "workspaces", workspaceSteps...); err != nil {
		return err
	}
	return pgdb.Migrate(ctx, db, "kv", kvSteps...)
}

// workspaceSteps are the workspaces' schema: step i moves it from version
// i to i+1. A published step is never edited, only followed by new ones.
//
// Every content table is keyed by the workspace's key (ws), never reused:
// a replaced workspace gets a new one. There are no foreign keys; deleting a workspace deletes
// its rows in each table in the same transaction. Bytes that may not be
// valid UTF-8 or may hold NUL (items, text, raw bytes, dict values, index
// terms) are bytea, since text cannot hold them.
var workspaceSteps = []migrate.Step[pgx.Tx]{
	// 1: the initial schema.
	pgdb.Exec(`
CREATE TABLE ws_workspaces (
	key         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- never reused; lists the later Put first among equal times
	id          text NOT NULL UNIQUE,
	type        text NOT NULL,
	shape       text NOT NULL CHECK (shape IN ('list', 'dict', 'text')),
	format      text NOT NULL,
	items       bigint NOT NULL,
	chars       bigint NOT NULL,
	tokens      bigint NOT NULL,
	schema      bytea,
	producer    text NOT NULL,
	args        bytea,
	meta        bytea,
	session     text NOT NULL,
	created_at  bigint,           -- Unix microseconds; NULL for the zero time
	accessed_at bigint,
	ttl         bigint NOT NULL,  -- nanoseconds
	expires_at  bigint,           -- Unix microseconds; NULL when it never expires
	next_seq    bigint NOT NULL DEFAULT 0, -- list: sequence number of the next item; text: chunks
	item_chars  bigint NOT NULL DEFAULT 0  -- list: characters of all items together
);
CREATE INDEX ws_workspaces_created ON ws_workspaces (created_at DESC NULLS LAST, key DESC);
CREATE INDEX ws_workspaces_session ON ws_workspaces (session, created_at);
CREATE INDEX ws_workspaces_type ON ws_workspaces (type, created_at);
CREATE INDEX ws_workspaces_expires ON ws_workspaces (expires_at) WHERE expires_at IS NOT NULL;

-- The original bytes, in pieces of rawPiece bytes; none means the
-- serialised content.
CREATE TABLE ws_raw (
	ws   bigint NOT NULL,
	n    int NOT NULL,
	data bytea NOT NULL,
	PRIMARY KEY (ws, n)
);

-- A dict's object.
CREATE TABLE ws_values (
	ws    bigint PRIMARY KEY,
	value bytea NOT NULL
);

-- One row per list item. seq orders a workspace's items as the list does
-- (appends take new, higher numbers; deletions only remove); idx is the
-- position, renumbered by DeleteItems.
CREATE TABLE ws_items (
	ws   bigint NOT NULL,
	seq  bigint NOT NULL,
	idx  bigint NOT NULL,
	data bytea NOT NULL, -- the item's JSON, as given
	PRIMARY KEY (ws, seq)
);
CREATE INDEX ws_items_position ON ws_items (ws, idx);

-- The index terms of each item: its distinct stems (index.go). A plain
-- query term is a range of this index (the terms starting with its stem).
CREATE TABLE ws_item_terms (
	ws   bigint NOT NULL,
	term bytea NOT NULL,
	seq  bigint NOT NULL,
	PRIMARY KEY (ws, term, seq)
);

-- Text in chunks of about chunkRunes characters that end at white space,
-- with their character offsets, so that a slice reads only its chunks.
CREATE TABLE ws_chunks (
	ws    bigint NOT NULL,
	n     int NOT NULL,
	start bigint NOT NULL, -- character offset of the chunk in the text
	runes int NOT NULL,
	text  bytea NOT NULL,
	PRIMARY KEY (ws, n)
);
CREATE INDEX ws_chunks_position ON ws_chunks (ws, start);

CREATE TABLE ws_chunk_terms (
	ws    bigint NOT NULL,
	term  bytea NOT NULL,
	chunk int NOT NULL,
	PRIMARY KEY (ws, term, chunk)
);
`),
}

// kvSteps are the key-value store's schema. Keys are bytea: a key may
// hold any bytes, NUL included, and bytea orders them byte by byte.
var kvSteps = []migrate.Step[pgx.Tx]{
	pgdb.Exec(`
CREATE TABLE kv (
	key        bytea PRIMARY KEY,
	value      bytea NOT NULL,
	expires_at bigint -- Unix microseconds; NULL when it never expires
);
CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
`),
}
