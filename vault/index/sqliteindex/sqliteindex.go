// Package sqliteindex is the default vault index: one SQLite file inside the
// vault folder (modernc.org/sqlite, pure Go), chunks in a table, an FTS5
// index over their text and heading path (porter stemming on unicode61
// tokens, BM25 ranking by SQLite), and vectors as little-endian float32
// blobs. The file is opened as every ctxkit SQLite database is
// (internal/sqlitedb): WAL, one writer connection with immediate
// transactions and a pool of read connections, so several processes index
// and query one vault; each Put replaces a document in one transaction, so
// a process killed during indexing leaves every document either as it was
// or as it became. [OpenMemory] opens an index with no file, for vaults
// kept in memory.
package sqliteindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/index"
)

// applicationID marks a SQLite file as a vault index ("ctxi").
const applicationID = 0x63747869

// schema is the index's schema, as migration steps. Files written before
// the schema had its mark (application_id) are at version 1 or 2; they are
// marked when opened.
var schema = migrate.Schema[*sql.Tx]{
	Name:      "vault index",
	Unmarked:  2,
	Recognize: sqlitedb.HasTables("docs", "chunks"),
	Steps: []migrate.Step[*sql.Tx]{
		// 1: documents, their chunks and the chunks' text index.
		sqlitedb.Exec(`
CREATE TABLE docs (
	path    TEXT PRIMARY KEY,
	hash    TEXT NOT NULL,
	meta    TEXT,
	chunks  INTEGER NOT NULL,
	indexed TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE chunks (
	id      INTEGER PRIMARY KEY,
	doc     TEXT NOT NULL,
	idx     INTEGER NOT NULL,
	heading TEXT NOT NULL,
	page    INTEGER NOT NULL,
	text    TEXT NOT NULL,
	vector  BLOB
);
CREATE INDEX chunks_doc ON chunks(doc, idx);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
	text, heading, content='chunks', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
	INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
	INSERT INTO chunks_fts(chunks_fts, rowid, text, heading) VALUES ('delete', old.id, old.text, old.heading);
END;
`),
		// 2: the generation every change moves.
		sqlitedb.Exec(`
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('generation', 0);
`),
	},
}

// options are the index's database settings: SQLite's defaults.
var options = sqlitedb.Options{Schema: schema, ApplicationID: applicationID}

// Index is a vault index in one SQLite database.
type Index struct {
	db *sqlitedb.DB
}

var _ index.Index = (*Index)(nil)

// Open opens or creates the index file at path. It refuses a file whose
// schema is newer than this code knows (migrate.ErrNewer), or that is not
// a vault index (migrate.ErrForeign).
func Open(ctx context.Context, path string) (*Index, error) {
	db, err := sqlitedb.Open(ctx, path, options)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return &Index{db: db}, nil
}

// OpenMemory opens a new, empty index that lives in memory, with no file,
// until it is closed.
func OpenMemory(ctx context.Context) (*Index, error) {
	db, err := sqlitedb.OpenMemory(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("open an index in memory: %w", err)
	}
	return &Index{db: db}, nil
}

// Close closes the database.
func (x *Index) Close() error { return x.db.Close() }

// Put replaces a document and its chunks in one transaction.
func (x *Index) Put(ctx context.Context, doc index.Doc, chunks []index.Chunk) error {
	meta, err := json.Marshal(doc.Meta)
	if err != nil {
		return fmt.Errorf("encode meta of %s: %w", doc.Path, err)
	}
	if doc.Indexed.IsZero() {
		doc.Indexed = time.Now()
	}
	return x.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM chunks WHERE doc = ?", doc.Path); err != nil {
			return fmt.Errorf("replace %s: %w", doc.Path, err)
		}
		ins, err := tx.PrepareContext(ctx, "INSERT INTO chunks (doc, idx, heading, page, text, vector) VALUES (?, ?, ?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer ins.Close()
		for i, c := range chunks {
			if _, err := ins.ExecContext(ctx, doc.Path, i, c.Heading, c.Page, c.Text, embed.VectorBytes(c.Vector)); err != nil {
				return fmt.Errorf("index %s chunk %d: %w", doc.Path, i, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO docs (path, hash, meta, chunks, indexed) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(path) DO UPDATE SET hash = excluded.hash, meta = excluded.meta, chunks = excluded.chunks, indexed = excluded.indexed`,
			doc.Path, doc.Hash, string(meta), len(chunks), doc.Indexed.UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("record %s: %w", doc.Path, err)
		}
		return bump(ctx, tx)
	})
}

// Delete removes a document and its chunks.
func (x *Index) Delete(ctx context.Context, path string) error {
	return x.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM chunks WHERE doc = ?", path); err != nil {
			return fmt.Errorf("delete %s: %w", path, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM docs WHERE path = ?", path); err != nil {
			return fmt.Errorf("delete %s: %w", path, err)
		}
		return bump(ctx, tx)
	})
}

// bump moves the generation, inside a change's transaction.
func bump(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "UPDATE meta SET value = value + 1 WHERE key = 'generation'"); err != nil {
		return fmt.Errorf("bump the generation: %w", err)
	}
	return nil
}

// Generation returns the index's generation, which every Put and Delete
// moves.
func (x *Index) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := x.db.Reader().QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'generation'").Scan(&g)
	return g, err
}

// Doc returns one document.
func (x *Index) Doc(ctx context.Context, path string) (index.Doc, error) {
	row := x.db.Reader().QueryRowContext(ctx, "SELECT path, hash, meta, chunks, indexed FROM docs WHERE path = ?", path)
	d, err := scanDoc(row)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("document %q: %w", path, index.ErrNotFound)
	}
	return d, err
}

// Docs returns every document by path.
func (x *Index) Docs(ctx context.Context) ([]index.Doc, error) {
	rows, err := x.db.Reader().QueryContext(ctx, "SELECT path, hash, meta, chunks, indexed FROM docs ORDER BY path")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []index.Doc
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(...any) error }

func scanDoc(s scanner) (index.Doc, error) {
	var d index.Doc
	var meta sql.NullString
	var indexed string
	if err := s.Scan(&d.Path, &d.Hash, &meta, &d.Chunks, &indexed); err != nil {
		return d, err
	}
	if meta.Valid && meta.String != "" && meta.String != "null" {
		if err := json.Unmarshal([]byte(meta.String), &d.Meta); err != nil {
			return d, fmt.Errorf("meta of %s: %w", d.Path, err)
		}
	}
	d.Indexed, _ = time.Parse(time.RFC3339Nano, indexed)
	return d, nil
}

// Chunk returns one chunk.
func (x *Index) Chunk(ctx context.Context, id int64) (index.Chunk, error) {
	row := x.db.Reader().QueryRowContext(ctx, "SELECT id, doc, idx, heading, page, text, vector FROM chunks WHERE id = ?", id)
	var c index.Chunk
	var vec []byte
	err := row.Scan(&c.ID, &c.Doc, &c.Index, &c.Heading, &c.Page, &c.Text, &vec)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("chunk %d: %w", id, index.ErrNotFound)
	}
	c.Vector = embed.VectorFromBytes(vec)
	return c, err
}

// Lexical ranks the chunks matching any word of query by BM25 (FTS5's rank,
// which is lower for better matches, is negated into a score).
func (x *Index) Lexical(ctx context.Context, query string, n int) ([]index.Hit, error) {
	match := textsearch.MatchAny(query)
	if match == "" || n <= 0 {
		return nil, nil
	}
	// Rank in the FTS table alone, then read only the top n chunks: joining
	// first would read the text of every match.
	rows, err := x.db.Reader().QueryContext(ctx, `SELECT c.id, c.doc, c.idx, c.heading, c.page, c.text, top.rank
		FROM (SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank, rowid LIMIT ?) AS top
		JOIN chunks c ON c.id = top.rowid ORDER BY top.rank, c.id`, match, n)
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	defer rows.Close()
	var hits []index.Hit
	for rows.Next() {
		var h index.Hit
		var rank float64
		if err := rows.Scan(&h.ID, &h.Doc, &h.Index, &h.Heading, &h.Page, &h.Text, &rank); err != nil {
			return nil, err
		}
		h.Score, h.Rank = -rank, len(hits)+1
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// EachText streams the chunks' text and heading paths.
func (x *Index) EachText(ctx context.Context, fn func(id int64, text, heading string) error) error {
	rows, err := x.db.Reader().QueryContext(ctx, "SELECT id, text, heading FROM chunks ORDER BY id")
	if err != nil {
		return fmt.Errorf("read the chunks' text: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var text, heading string
		if err := rows.Scan(&id, &text, &heading); err != nil {
			return err
		}
		if err := fn(id, text, heading); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EachVector streams the chunks' vectors.
func (x *Index) EachVector(ctx context.Context, fn func(id int64, v []float32) error) error {
	rows, err := x.db.Reader().QueryContext(ctx, "SELECT id, vector FROM chunks WHERE vector IS NOT NULL ORDER BY id")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return err
		}
		if err := fn(id, embed.VectorFromBytes(b)); err != nil {
			return err
		}
	}
	return rows.Err()
}
