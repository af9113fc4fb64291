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
	"math"
	"math/rand/v2"
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
		// 3: a second set of tables, for rebuilds (see tables), the
		// documents deleted while one runs, and chunk ids that no
		// generation reuses.
		sqlitedb.Exec(sets[1].ddl() + `
CREATE TABLE rebuild_gone (path TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO meta VALUES ('current', 0), ('building', -1), ('build', 0),
	('next_chunk', (SELECT coalesce(max(id), 0) + 1 FROM chunks));
`),
		// 4: where each chunk is in its file (tables.locators). The
		// chunks indexed before are marked unrecorded, keeping the page
		// of their first word, and their documents' hashes are cleared so
		// that the next index extracts them again.
		sqlitedb.Exec(sets[0].locators() + sets[1].locators() + `
UPDATE docs SET hash = '';
UPDATE docs_1 SET hash = '';
`),
	},
}

// tables names one set of the index's tables. The index holds two: the
// current generation in one; a rebuild fills the other, and its commit
// makes that one current (meta 'current') and empties the first. Set 0
// has the names the index had before it had two.
type tables struct{ docs, chunks, fts, suffix string }

var sets = [2]tables{{"docs", "chunks", "chunks_fts", ""}, {"docs_1", "chunks_1", "chunks_fts_1", "_1"}}

// ddl creates the set's tables, empty, as schema 3 had them; locators
// brings them up to date.
func (t tables) ddl() string {
	return fmt.Sprintf(`
CREATE TABLE %[1]s (
	path    TEXT PRIMARY KEY,
	hash    TEXT NOT NULL,
	meta    TEXT,
	chunks  INTEGER NOT NULL,
	indexed TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE %[2]s (
	id      INTEGER PRIMARY KEY,
	doc     TEXT NOT NULL,
	idx     INTEGER NOT NULL,
	heading TEXT NOT NULL,
	page    INTEGER NOT NULL,
	text    TEXT NOT NULL,
	vector  BLOB
);
CREATE INDEX %[2]s_doc ON %[2]s(doc, idx);
CREATE VIRTUAL TABLE %[3]s USING fts5(
	text, heading, content='%[2]s', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER %[2]s_ai AFTER INSERT ON %[2]s BEGIN
	INSERT INTO %[3]s(rowid, text, heading) VALUES (new.id, new.text, new.heading);
END;
CREATE TRIGGER %[2]s_ad AFTER DELETE ON %[2]s BEGIN
	INSERT INTO %[3]s(%[3]s, rowid, text, heading) VALUES ('delete', old.id, old.text, old.heading);
END;
`, t.docs, t.chunks, t.fts)
}

// locators gives the set's chunks their locator (index.Locator): the
// column page, the page of the first word, becomes loc_start, and a chunk
// written without a unit is unrecorded.
func (t tables) locators() string {
	return fmt.Sprintf(`
ALTER TABLE %[1]s RENAME COLUMN page TO loc_start;
ALTER TABLE %[1]s ADD COLUMN loc_unit TEXT NOT NULL DEFAULT '%[2]s';
ALTER TABLE %[1]s ADD COLUMN loc_end INTEGER NOT NULL DEFAULT 0;
`, t.chunks, index.Unrecorded)
}

// empty drops the set's tables and creates them again.
func (t tables) empty(ctx context.Context, tx *sql.Tx) error {
	drop := fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %s;", t.fts, t.chunks, t.docs)
	if _, err := tx.ExecContext(ctx, drop+t.ddl()+t.locators()); err != nil {
		return fmt.Errorf("empty the tables of a generation: %w", err)
	}
	return nil
}

// options are the index's database settings: SQLite's defaults.
var options = sqlitedb.Options{Schema: schema, ApplicationID: applicationID}

// Index is a vault index in one SQLite database.
type Index struct {
	db *sqlitedb.DB
	w  sqlitedb.Stmts // the writes of Put and Delete, prepared once
	r  *sql.Stmt      // qChunk, prepared on the readers
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
	return newIndex(ctx, db)
}

// OpenMemory opens a new, empty index that lives in memory, with no file,
// until it is closed.
func OpenMemory(ctx context.Context) (*Index, error) {
	db, err := sqlitedb.OpenMemory(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("open an index in memory: %w", err)
	}
	return newIndex(ctx, db)
}

// newIndex prepares the statements of the write path.
func newIndex(ctx context.Context, db *sqlitedb.DB) (*Index, error) {
	queries := []string{qState, qBumpGeneration, qSetMeta}
	for _, t := range sets {
		queries = append(queries, t.deleteChunks(), t.insertChunk(), t.upsertDoc())
	}
	w, err := sqlitedb.Prepare(ctx, db.Writer(), queries...)
	if err != nil {
		db.Close()
		return nil, err
	}
	r, err := db.Reader().PrepareContext(ctx, qChunk)
	if err != nil {
		w.Close()
		db.Close()
		return nil, fmt.Errorf("prepare %q: %w", qChunk, err)
	}
	return &Index{db: db, w: w, r: r}, nil
}

// Close closes the database.
func (x *Index) Close() error { return errors.Join(x.r.Close(), x.w.Close(), x.db.Close()) }

// The statements of the write path.
const (
	qState = `SELECT
		(SELECT value FROM meta WHERE key = 'current'), (SELECT value FROM meta WHERE key = 'building'),
		(SELECT value FROM meta WHERE key = 'build'), (SELECT value FROM meta WHERE key = 'next_chunk')`
	qBumpGeneration = "UPDATE meta SET value = value + 1 WHERE key = 'generation'"
	qSetMeta        = "UPDATE meta SET value = ? WHERE key = ?"
	// qChunk reads a chunk of the current set: one statement is one
	// snapshot, so no transaction is needed to read the set and the chunk.
	qChunk = `SELECT ` + chunkColumns + `, vector FROM chunks
		WHERE id = ?1 AND (SELECT value & 1 FROM meta WHERE key = 'current') = 0
	UNION ALL SELECT ` + chunkColumns + `, vector FROM chunks_1
		WHERE id = ?1 AND (SELECT value & 1 FROM meta WHERE key = 'current') = 1`
)

// chunkColumns are the columns of a chunk that chunkFields scans.
const chunkColumns = "id, doc, idx, heading, loc_unit, loc_start, loc_end, text"

// chunkFields returns where to scan chunkColumns into c.
func chunkFields(c *index.Chunk) []any {
	return []any{&c.ID, &c.Doc, &c.Index, &c.Heading, (*string)(&c.Loc.Unit), &c.Loc.Start, &c.Loc.End, &c.Text}
}

func (t tables) deleteChunks() string { return "DELETE FROM " + t.chunks + " WHERE doc = ?" }

func (t tables) insertChunk() string {
	return "INSERT INTO " + t.chunks + " (id, doc, idx, heading, loc_unit, loc_start, loc_end, text, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
}

func (t tables) upsertDoc() string {
	return "INSERT INTO " + t.docs + ` (path, hash, meta, chunks, indexed) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(path) DO UPDATE SET hash = excluded.hash, meta = excluded.meta, chunks = excluded.chunks, indexed = excluded.indexed`
}

// state is the index's counters, as one transaction reads them.
type state struct {
	current  int64 // the set queries read
	building int64 // the set a rebuild fills; -1 when none
	build    int64 // the id of the rebuild filling it
	next     int64 // the next chunk id
}

// readState reads the counters in tx, in one statement (prepared in m, a
// nil m for a read transaction).
func readState(ctx context.Context, m sqlitedb.Stmts, tx *sql.Tx) (state, error) {
	st := state{building: -1}
	err := m.QueryRow(ctx, tx, qState).Scan(&st.current, &st.building, &st.build, &st.next)
	if err != nil {
		return st, fmt.Errorf("read the index's state: %w", err)
	}
	return st, nil
}

// live returns the sets a change goes to: the current one, and the one a
// rebuild is filling, if any.
func (st state) live() []tables {
	out := []tables{sets[st.current&1]}
	if st.building >= 0 && st.building != st.current {
		out = append(out, sets[st.building&1])
	}
	return out
}

func (x *Index) setMeta(ctx context.Context, tx *sql.Tx, key string, v int64) error {
	if _, err := x.w.Exec(ctx, tx, qSetMeta, v, key); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	return nil
}

// put replaces a document in the sets, with chunk ids from next (which it
// moves past them).
func (x *Index) put(ctx context.Context, tx *sql.Tx, in []tables, next *int64, doc index.Doc, chunks []index.Chunk) error {
	meta, err := json.Marshal(doc.Meta)
	if err != nil {
		return fmt.Errorf("encode meta of %s: %w", doc.Path, err)
	}
	if doc.Indexed.IsZero() {
		doc.Indexed = time.Now()
	}
	for _, t := range in {
		if _, err := x.w.Exec(ctx, tx, t.deleteChunks(), doc.Path); err != nil {
			return fmt.Errorf("replace %s: %w", doc.Path, err)
		}
		ins := x.w.In(ctx, tx, t.insertChunk())
		for i, c := range chunks {
			if _, err := ins.ExecContext(ctx, *next, doc.Path, i, c.Heading, string(c.Loc.Unit), c.Loc.Start, c.Loc.End, c.Text, embed.VectorBytes(c.Vector)); err != nil {
				return fmt.Errorf("index %s chunk %d: %w", doc.Path, i, err)
			}
			*next++
		}
		if _, err := x.w.Exec(ctx, tx, t.upsertDoc(), doc.Path, doc.Hash, string(meta), len(chunks), doc.Indexed.UTC().Format(time.RFC3339Nano)); err != nil {
			return fmt.Errorf("record %s: %w", doc.Path, err)
		}
	}
	return nil
}

// remove deletes a document and its chunks from a set.
func remove(ctx context.Context, tx *sql.Tx, t tables, path string) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+t.chunks+" WHERE doc = ?", path); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+t.docs+" WHERE path = ?", path); err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// Put replaces a document and its chunks in one transaction, in the
// current generation and in the one a rebuild is filling.
func (x *Index) Put(ctx context.Context, doc index.Doc, chunks []index.Chunk) error {
	return x.db.Write(ctx, func(tx *sql.Tx) error {
		st, err := readState(ctx, x.w, tx)
		if err != nil {
			return err
		}
		if err := x.put(ctx, tx, st.live(), &st.next, doc, chunks); err != nil {
			return err
		}
		return x.bump(ctx, tx, st.next)
	})
}

// Delete removes a document and its chunks, from every live generation.
func (x *Index) Delete(ctx context.Context, path string) error {
	return x.db.Write(ctx, func(tx *sql.Tx) error {
		st, err := readState(ctx, x.w, tx)
		if err != nil {
			return err
		}
		in := st.live()
		for _, t := range in {
			if err := remove(ctx, tx, t, path); err != nil {
				return err
			}
		}
		if len(in) > 1 { // a rebuild must not bring it back
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO rebuild_gone VALUES (?)", path); err != nil {
				return fmt.Errorf("delete %s: %w", path, err)
			}
		}
		return x.bump(ctx, tx, st.next)
	})
}

// bump moves the generation and records the next chunk id. Each statement
// changes one row: a statement that may change several takes a savepoint,
// at which FTS5 writes out the terms pending in the transaction, one more
// segment per document indexed.
func (x *Index) bump(ctx context.Context, tx *sql.Tx, next int64) error {
	if _, err := x.w.Exec(ctx, tx, qBumpGeneration); err != nil {
		return fmt.Errorf("bump the generation: %w", err)
	}
	return x.setMeta(ctx, tx, "next_chunk", next)
}

// Generation returns the index's generation, which every Put, Delete and
// committed rebuild moves.
func (x *Index) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := x.db.Reader().QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'generation'").Scan(&g)
	return g, err
}

// Rebuild empties the set the current generation is not in and starts
// filling it.
func (x *Index) Rebuild(ctx context.Context) (index.Builder, error) {
	b := &builder{x: x, id: rand.Int64N(math.MaxInt64) + 1}
	err := x.db.Write(ctx, func(tx *sql.Tx) error {
		st, err := readState(ctx, x.w, tx)
		if err != nil {
			return err
		}
		b.set = 1 - st.current&1
		if err := b.empty(ctx, tx, sets[b.set]); err != nil {
			return err
		}
		if err := x.setMeta(ctx, tx, "building", b.set); err != nil {
			return err
		}
		return x.setMeta(ctx, tx, "build", b.id)
	})
	if err != nil {
		return nil, fmt.Errorf("start a rebuild: %w", err)
	}
	return b, nil
}

// builder is a rebuild in progress, known by a random id that a later
// rebuild replaces.
type builder struct {
	x   *Index
	set int64
	id  int64
}

// mine reads the index's state in tx and checks that this rebuild has not
// been superseded.
func (b *builder) mine(ctx context.Context, tx *sql.Tx) (state, error) {
	st, err := readState(ctx, b.x.w, tx)
	if err == nil && (st.build != b.id || st.building != b.set) {
		err = index.ErrSuperseded
	}
	return st, err
}

// empty empties a set and forgets the documents deleted during a rebuild.
func (b *builder) empty(ctx context.Context, tx *sql.Tx, t tables) error {
	if err := t.empty(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM rebuild_gone"); err != nil {
		return fmt.Errorf("empty the tables of a generation: %w", err)
	}
	return nil
}

// Put adds a document to the new generation unless a Put or Delete on the
// index has changed it since the rebuild began: that change is newer than
// the builder's copy.
func (b *builder) Put(ctx context.Context, doc index.Doc, chunks []index.Chunk) error {
	return b.x.db.Write(ctx, func(tx *sql.Tx) error {
		st, err := b.mine(ctx, tx)
		if err != nil {
			return err
		}
		t := sets[b.set]
		var changed bool
		err = tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.docs+" WHERE path = ?1) OR EXISTS (SELECT 1 FROM rebuild_gone WHERE path = ?1)", doc.Path).Scan(&changed)
		if err != nil {
			return fmt.Errorf("rebuild %s: %w", doc.Path, err)
		}
		if changed {
			return nil
		}
		if err := b.x.put(ctx, tx, []tables{t}, &st.next, doc, chunks); err != nil {
			return err
		}
		return b.x.setMeta(ctx, tx, "next_chunk", st.next)
	})
}

func (b *builder) Commit(ctx context.Context) error {
	return b.x.db.Write(ctx, func(tx *sql.Tx) error {
		st, err := b.mine(ctx, tx)
		if err != nil {
			return err
		}
		if err := b.x.setMeta(ctx, tx, "current", b.set); err != nil {
			return err
		}
		if err := b.x.setMeta(ctx, tx, "building", -1); err != nil {
			return err
		}
		if err := b.empty(ctx, tx, sets[1-b.set]); err != nil {
			return err
		}
		return b.x.bump(ctx, tx, st.next)
	})
}

func (b *builder) Abort(ctx context.Context) error {
	return b.x.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := b.mine(ctx, tx); errors.Is(err, index.ErrSuperseded) {
			return nil // another rebuild owns the set now
		} else if err != nil {
			return err
		}
		if err := b.x.setMeta(ctx, tx, "building", -1); err != nil {
			return err
		}
		return b.empty(ctx, tx, sets[b.set])
	})
}

// read runs fn in a read transaction with the current generation's tables.
func (x *Index) read(ctx context.Context, fn func(tx *sql.Tx, t tables) error) error {
	return x.db.Read(ctx, func(tx *sql.Tx) error {
		st, err := readState(ctx, nil, tx) // a reader's transaction: nothing prepared
		if err != nil {
			return err
		}
		return fn(tx, sets[st.current&1])
	})
}

// Doc returns one document.
func (x *Index) Doc(ctx context.Context, path string) (index.Doc, error) {
	var d index.Doc
	err := x.read(ctx, func(tx *sql.Tx, t tables) error {
		var err error
		d, err = scanDoc(tx.QueryRowContext(ctx, "SELECT path, hash, meta, chunks, indexed FROM "+t.docs+" WHERE path = ?", path))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("document %q: %w", path, index.ErrNotFound)
	}
	return d, err
}

// Docs returns every document by path.
func (x *Index) Docs(ctx context.Context) ([]index.Doc, error) {
	var out []index.Doc
	err := x.read(ctx, func(tx *sql.Tx, t tables) error {
		rows, err := tx.QueryContext(ctx, "SELECT path, hash, meta, chunks, indexed FROM "+t.docs+" ORDER BY path")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDoc(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, err
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

// Chunks returns a document's chunks of the current generation, in order,
// with their vectors; ErrNotFound when the document is not indexed.
func (x *Index) Chunks(ctx context.Context, path string) ([]index.Chunk, error) {
	var out []index.Chunk
	err := x.read(ctx, func(tx *sql.Tx, t tables) error {
		out = nil
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT chunks FROM "+t.docs+" WHERE path = ?", path).Scan(&n); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "SELECT "+chunkColumns+", vector FROM "+t.chunks+" WHERE doc = ? ORDER BY idx", path)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = make([]index.Chunk, 0, n)
		for rows.Next() {
			var c index.Chunk
			var vec []byte
			if err := rows.Scan(append(chunkFields(&c), &vec)...); err != nil {
				return err
			}
			c.Vector = embed.VectorFromBytes(vec)
			out = append(out, c)
		}
		return rows.Err()
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("document %q: %w", path, index.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("chunks of %q: %w", path, err)
	}
	return out, nil
}

// Chunk returns one chunk of the current generation, in one statement:
// a server asks for the few it answers with, at every query.
func (x *Index) Chunk(ctx context.Context, id int64) (index.Chunk, error) {
	var c index.Chunk
	var vec []byte
	err := x.r.QueryRowContext(ctx, id).Scan(append(chunkFields(&c), &vec)...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("chunk %d: %w", id, index.ErrNotFound)
	}
	c.Vector = embed.VectorFromBytes(vec)
	return c, err
}

// ChunksByID reads the chunks one by one: each is one prepared statement
// in this process, as cheap as a batch.
func (x *Index) ChunksByID(ctx context.Context, ids []int64) (map[int64]index.Chunk, error) {
	out := make(map[int64]index.Chunk, len(ids))
	for _, id := range ids {
		c, err := x.Chunk(ctx, id)
		if errors.Is(err, index.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
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
	var hits []index.Hit
	err := x.read(ctx, func(tx *sql.Tx, t tables) error {
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT %[3]s, top.rank
		FROM (SELECT rowid, rank FROM %[1]s WHERE %[1]s MATCH ? ORDER BY rank, rowid LIMIT ?) AS top
		JOIN %[2]s c ON c.id = top.rowid ORDER BY top.rank, c.id`, t.fts, t.chunks, chunkColumns), match, n)
		if err != nil {
			return fmt.Errorf("lexical search: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h index.Hit
			var rank float64
			if err := rows.Scan(append(chunkFields(&h.Chunk), &rank)...); err != nil {
				return err
			}
			h.Score, h.Rank = -rank, len(hits)+1
			hits = append(hits, h)
		}
		return rows.Err()
	})
	return hits, err
}

// EachText streams the current generation's chunks' text and heading
// paths.
func (x *Index) EachText(ctx context.Context, fn func(id int64, text, heading string) error) error {
	return x.read(ctx, func(tx *sql.Tx, t tables) error {
		rows, err := tx.QueryContext(ctx, "SELECT id, text, heading FROM "+t.chunks+" ORDER BY id")
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
	})
}

// EachVector streams the current generation's chunks' vectors.
func (x *Index) EachVector(ctx context.Context, fn func(id int64, v []float32) error) error {
	return x.read(ctx, func(tx *sql.Tx, t tables) error {
		rows, err := tx.QueryContext(ctx, "SELECT id, vector FROM "+t.chunks+" WHERE vector IS NOT NULL ORDER BY id")
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
	})
}
