package sqlitestore

import (
	"database/sql"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb"
)

// applicationID marks a SQLite file as a ctxkit store ("ctxk"), so that Open
// refuses a database that belongs to something else.
const applicationID = 0x6374786b

// schema is the store's schema, as migration steps: step i (from 0) moves
// the database from PRAGMA user_version i to i+1. A published step is never
// edited, only followed by new ones.
var schema = migrate.Schema[*sql.Tx]{Name: "ctxkit store", Steps: []migrate.Step[*sql.Tx]{
	// 1: the initial schema.
	sqlitedb.Exec(`
CREATE TABLE workspaces (
	key         INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused, so neither are item and chunk ids
	id          TEXT NOT NULL UNIQUE,
	type        TEXT NOT NULL,
	shape       TEXT NOT NULL CHECK (shape IN ('list', 'dict', 'text')),
	format      TEXT NOT NULL,
	items       INTEGER NOT NULL,
	chars       INTEGER NOT NULL,
	tokens      INTEGER NOT NULL,
	schema      BLOB,
	producer    TEXT NOT NULL,
	args        BLOB,
	meta        BLOB,
	session     TEXT NOT NULL,
	created_at  INTEGER,          -- Unix microseconds; NULL for the zero time
	accessed_at INTEGER,
	ttl         INTEGER NOT NULL, -- nanoseconds
	expires_at  INTEGER,          -- Unix microseconds; NULL when it never expires
	next_seq    INTEGER NOT NULL DEFAULT 0, -- list: sequence number of the next item; text: chunks
	item_chars  INTEGER NOT NULL DEFAULT 0, -- list: characters of all items together
	indexed     INTEGER NOT NULL DEFAULT 1, -- 0 while the content is not in the FTS index yet
	version     INTEGER NOT NULL DEFAULT 0  -- list: bumped by every mutation
) STRICT;
CREATE INDEX workspaces_created ON workspaces (created_at);
CREATE INDEX workspaces_session ON workspaces (session, created_at);
CREATE INDEX workspaces_type ON workspaces (type, created_at);
CREATE INDEX workspaces_expires ON workspaces (expires_at) WHERE expires_at IS NOT NULL;

-- Large values live apart so that listing and sweeping never read them.
CREATE TABLE blobs (
	ws    INTEGER PRIMARY KEY REFERENCES workspaces (key) ON DELETE CASCADE,
	raw   BLOB, -- the original bytes; NULL means the serialised content
	value TEXT  -- dict: the JSON object
) STRICT;

-- One row per list item. id is (workspace key << 32 | sequence number), so a
-- workspace's items are one id range, in list order; idx is the position.
CREATE TABLE items (
	id   INTEGER PRIMARY KEY,
	ws   INTEGER NOT NULL REFERENCES workspaces (key) ON DELETE CASCADE,
	idx  INTEGER NOT NULL,
	data TEXT NOT NULL -- the item's JSON, as given
) STRICT;
CREATE INDEX items_position ON items (ws, idx);

-- The index terms of each item (see index.go), rowid = items.id. The
-- terms are computed in Go and space-separated, so the ascii tokenizer,
-- which never splits a run of non-ASCII bytes, only has to split on spaces.
CREATE VIRTUAL TABLE items_fts USING fts5 (
	terms, content = '', contentless_delete = 1, detail = none, tokenize = 'ascii'
);

-- Text content in chunks of about chunkRunes characters that end at white
-- space. id is (workspace key << 32 | chunk number).
CREATE TABLE chunks (
	id    INTEGER PRIMARY KEY,
	ws    INTEGER NOT NULL REFERENCES workspaces (key) ON DELETE CASCADE,
	start INTEGER NOT NULL, -- character offset of the chunk in the text
	runes INTEGER NOT NULL,
	text  TEXT NOT NULL
) STRICT;
CREATE INDEX chunks_position ON chunks (ws, start);

CREATE VIRTUAL TABLE chunks_fts USING fts5 (
	terms, content = '', contentless_delete = 1, detail = none, tokenize = 'ascii'
);

-- A larger in-memory hash than the default 1 MB means fewer, larger
-- segments while a big list is indexed, and less merging.
INSERT INTO items_fts (items_fts, rank) VALUES ('hashsize', 16777216);
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('hashsize', 16777216);
`),
	// 2: the key-value store (store.KV).
	sqlitedb.Exec(`
CREATE TABLE kv (
	key        TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	expires_at INTEGER -- Unix microseconds; NULL when it never expires
) STRICT, WITHOUT ROWID;
CREATE INDEX kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
`),
	// 3: index terms lose their diacritics, as FTS5's unicode61 tokenizer
	// has them by default (internal/textsearch): the terms indexed before
	// ("écol" for École) are dropped, and every list and text is indexed
	// again by the first search that needs it.
	sqlitedb.Exec(`
INSERT INTO items_fts (items_fts) VALUES ('delete-all');
INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all');
UPDATE workspaces SET indexed = 0 WHERE shape IN ('list', 'text');
`),
}}
