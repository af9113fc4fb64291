// Package pgindex is the vault index in PostgreSQL: every vault's
// documents, chunks and terms are rows of shared tables (prefix ix_),
// keyed by the vault's id, in the schema of a [pgdb.DB] that the other
// PostgreSQL stores share.
//
// Lexical search ranks exactly as the sqliteindex and the in-memory
// Lexicon do: the terms of each chunk's text and heading path are those of
// internal/textsearch (FTS5's "porter unicode61" tokens), stored one row
// per term and chunk with its frequency and the chunk's length under a
// B-tree index on (vault_id, set_id, term); a query reads the postings of
// its terms and the set's chunk and token counts in one snapshot and
// scores them in Go with textsearch's BM25 (IDF, Norm, Weight), best
// first, ties by ascending chunk id.
//
// A rebuild fills a new set of rows (set_id) while queries read the
// current one; Commit makes it current and deletes the old one in one
// transaction. Every change locks the vault's row in ix_state first, so
// the writers of all processes take turns on a vault and never deadlock,
// and moves its generation there in the same transaction. Chunk ids come
// from one identity column: never reused, across sets and vaults.
package pgindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/vault/index"
)

// Migrate creates or updates the index's tables (component "index"). Run
// it once per process before New.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return pgdb.Migrate(ctx, db, "index", pgdb.Exec(schemaV1), pgdb.Exec(schemaV2))
}

// schemaV2: where each chunk is in its file (index.Locator). The column
// page, the page of the first word, becomes loc_start; the chunks indexed
// before are unrecorded, and their documents' hashes are cleared so that
// the next index extracts them again.
const schemaV2 = `
ALTER TABLE ix_chunks RENAME COLUMN page TO loc_start;
ALTER TABLE ix_chunks ADD COLUMN loc_unit text NOT NULL DEFAULT '` + string(index.Unrecorded) + `',
	ADD COLUMN loc_end integer NOT NULL DEFAULT 0;
UPDATE ix_docs SET hash = '';
`

// schemaV1: the vaults' state, their sets' counts, documents, chunks,
// terms, and the documents deleted during a rebuild. Paths and terms
// compare bytewise (COLLATE "C"), as SQLite does; text and heading are
// bytea because a chunk's text may hold NUL, which text refuses.
const schemaV1 = `
CREATE TABLE ix_state (
	vault_id   text PRIMARY KEY,
	generation bigint NOT NULL,
	current    bigint NOT NULL,
	building   bigint,
	next_set   bigint NOT NULL
);
CREATE TABLE ix_sets (
	vault_id text NOT NULL,
	set_id   bigint NOT NULL,
	chunks   bigint NOT NULL,
	tokens   bigint NOT NULL,
	PRIMARY KEY (vault_id, set_id)
);
CREATE TABLE ix_docs (
	vault_id text NOT NULL,
	set_id   bigint NOT NULL,
	path     text COLLATE "C" NOT NULL,
	hash     text NOT NULL,
	meta     text,
	chunks   integer NOT NULL,
	tokens   bigint NOT NULL,
	indexed  timestamptz NOT NULL,
	PRIMARY KEY (vault_id, set_id, path)
);
CREATE TABLE ix_chunks (
	id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	vault_id text NOT NULL,
	set_id   bigint NOT NULL,
	doc      text COLLATE "C" NOT NULL,
	idx      integer NOT NULL,
	heading  bytea NOT NULL,
	page     integer NOT NULL,
	text     bytea NOT NULL,
	vector   real[],
	length   integer NOT NULL
);
CREATE INDEX ix_chunks_doc ON ix_chunks (vault_id, set_id, doc, idx);
CREATE INDEX ix_chunks_set ON ix_chunks (vault_id, set_id, id);
CREATE TABLE ix_terms (
	vault_id text NOT NULL,
	set_id   bigint NOT NULL,
	term     text COLLATE "C" NOT NULL,
	chunk    bigint NOT NULL,
	freq     integer NOT NULL,
	length   integer NOT NULL,
	PRIMARY KEY (vault_id, set_id, term, chunk) INCLUDE (freq, length)
);
CREATE INDEX ix_terms_chunk ON ix_terms (chunk);
CREATE TABLE ix_gone (
	vault_id text NOT NULL,
	set_id   bigint NOT NULL,
	path     text COLLATE "C" NOT NULL,
	PRIMARY KEY (vault_id, set_id, path)
);
`

// Drop deletes every row of a vault's index, for a purged vault.
func Drop(ctx context.Context, db *pgdb.DB, vaultID string) error {
	err := db.Write(ctx, func(tx pgx.Tx) error {
		// The state row first: the vault's writers wait on it.
		for _, table := range []string{"ix_state", "ix_gone", "ix_terms", "ix_chunks", "ix_docs", "ix_sets"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE vault_id = $1", vaultID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop the index of vault %s: %w", vaultID, err)
	}
	return nil
}

// Index is one vault's index in a PostgreSQL database.
type Index struct {
	db    *pgdb.DB
	vault string
}

var _ index.Index = (*Index)(nil)

// New returns the index of the vault vaultID in db, whose schema Migrate
// has brought up to date. It does no I/O.
func New(db *pgdb.DB, vaultID string) *Index { return &Index{db: db, vault: vaultID} }

// Close releases nothing: the pool is the caller's.
func (x *Index) Close() error { return nil }

// The statements that lock the vault's state row, creating it (with the
// counts of its first set) when the vault has none yet. Every change to a
// vault starts with one of them.
const (
	// qLockBump also moves the generation, for Put.
	qLockBump = `WITH s AS (
		INSERT INTO ix_state AS s (vault_id, generation, current, building, next_set) VALUES ($1, 1, 0, NULL, 1)
		ON CONFLICT (vault_id) DO UPDATE SET generation = s.generation + 1
		RETURNING current, building, next_set),
	z AS (INSERT INTO ix_sets (vault_id, set_id, chunks, tokens) SELECT $1, current, 0, 0 FROM s ON CONFLICT DO NOTHING)
	SELECT current, building, next_set FROM s`
	// qLock leaves the generation, for Rebuild.
	qLock = `WITH s AS (
		INSERT INTO ix_state AS s (vault_id, generation, current, building, next_set) VALUES ($1, 0, 0, NULL, 1)
		ON CONFLICT (vault_id) DO UPDATE SET generation = s.generation
		RETURNING current, building, next_set),
	z AS (INSERT INTO ix_sets (vault_id, set_id, chunks, tokens) SELECT $1, current, 0, 0 FROM s ON CONFLICT DO NOTHING)
	SELECT current, building, next_set FROM s`
	// qLockBumpExisting moves the generation of a vault that has a state
	// row, for Delete (a vault without one has nothing to delete).
	qLockBumpExisting = `UPDATE ix_state SET generation = generation + 1 WHERE vault_id = $1 RETURNING current, building, next_set`
	// qLockOnly locks the state row of a vault that has one, for a
	// builder.
	qLockOnly = `SELECT current, building, next_set FROM ix_state WHERE vault_id = $1 FOR UPDATE`
)

// state is a vault's row in ix_state, as a transaction that locked it
// read it.
type state struct {
	current  int64  // the set queries read
	building *int64 // the set a rebuild fills, nil when none
	next     int64  // the next set id
}

// live returns the sets a change goes to: the current one, and the one a
// rebuild is filling, if any.
func (st state) live() []int64 {
	if st.building != nil && *st.building != st.current {
		return []int64{st.current, *st.building}
	}
	return []int64{st.current}
}

// lock runs one of the lock statements in tx. In READ COMMITTED, every
// later statement of tx sees what the transactions that held the lock
// before committed.
func (x *Index) lock(ctx context.Context, tx pgx.Tx, q string) (state, bool, error) {
	var st state
	err := tx.QueryRow(ctx, q, x.vault).Scan(&st.current, &st.building, &st.next)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("lock the index of vault %s: %w", x.vault, err)
	}
	return st, true, nil
}

// The statements that change one set (parameters: vault, set, path, ...).
const (
	// qUncount removes a document's row and its counts from the set's,
	// adding $4 chunks and $5 tokens instead.
	qUncount = `WITH old AS (DELETE FROM ix_docs WHERE vault_id = $1 AND set_id = $2 AND path = $3 RETURNING chunks, tokens)
	UPDATE ix_sets SET chunks = ix_sets.chunks - coalesce((SELECT sum(chunks) FROM old), 0) + $4,
		tokens = ix_sets.tokens - coalesce((SELECT sum(tokens) FROM old), 0) + $5
	WHERE vault_id = $1 AND set_id = $2`
	// qDeleteTerms finds the document's chunks first (an InitPlan), so
	// that the terms go by their chunk index whatever the planner's
	// statistics say: a join let it scan every term of the vault per Put
	// while the tables were not analyzed yet, which made indexing
	// quadratic.
	qDeleteTerms = `DELETE FROM ix_terms
		WHERE chunk = ANY(ARRAY(SELECT id FROM ix_chunks WHERE vault_id = $1 AND set_id = $2 AND doc = $3))`
	qDeleteChunks = `DELETE FROM ix_chunks WHERE vault_id = $1 AND set_id = $2 AND doc = $3`
	// qInsertChunks inserts the chunks from parallel arrays, each vector
	// a slice [lo+1, hi] of one array of all, and their terms.
	qInsertChunks = `WITH c AS (
		INSERT INTO ix_chunks (vault_id, set_id, doc, idx, heading, loc_unit, loc_start, loc_end, text, vector, length)
		SELECT $1, $2, $3, u.idx, u.heading, u.loc_unit, u.loc_start, u.loc_end, u.text,
			CASE WHEN u.hasvec THEN ($4::real[])[u.lo + 1 : u.hi] END, u.length
		FROM unnest($5::int[], $6::bytea[], $7::text[], $8::int[], $9::int[], $10::bytea[], $11::bool[], $12::int[], $13::int[], $14::int[])
			AS u(idx, heading, loc_unit, loc_start, loc_end, text, hasvec, lo, hi, length)
		ORDER BY u.idx
		RETURNING id, idx)
	INSERT INTO ix_terms (vault_id, set_id, term, chunk, freq, length)
	SELECT $1, $2, t.term, c.id, t.freq, t.length
	FROM unnest($15::int[], $16::text[], $17::int[], $18::int[]) AS t(idx, term, freq, length) JOIN c ON c.idx = t.idx`
	qInsertDoc = `INSERT INTO ix_docs (vault_id, set_id, path, hash, meta, chunks, tokens, indexed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
)

// prepared is a document ready to insert: its chunks as the columns of
// qInsertChunks, and its terms.
type prepared struct {
	doc    index.Doc
	meta   string
	chunks int
	tokens int64
	args   []any // $4 onwards of qInsertChunks
}

// prepare tokenizes a document's chunks (text, then heading path, as one
// row of FTS5) and lays them out for qInsertChunks.
func prepare(doc index.Doc, chunks []index.Chunk) (*prepared, error) {
	meta, err := json.Marshal(doc.Meta)
	if err != nil {
		return nil, fmt.Errorf("encode meta of %s: %w", doc.Path, err)
	}
	if !utf8.ValidString(doc.Path) || !utf8.ValidString(doc.Hash) {
		return nil, fmt.Errorf("document %q: path or hash: %w", doc.Path, index.ErrInvalidUTF8)
	}
	if doc.Indexed.IsZero() {
		doc.Indexed = time.Now()
	}
	p := &prepared{doc: doc, meta: string(meta), chunks: len(chunks)}
	n := len(chunks)
	var (
		vecs    []float32
		idx     = make([]int32, n)
		heading = make([][]byte, n)
		unit    = make([]string, n)
		start   = make([]int32, n)
		end     = make([]int32, n)
		text    = make([][]byte, n)
		hasvec  = make([]bool, n)
		lo, hi  = make([]int32, n), make([]int32, n)
		length  = make([]int32, n)
		tIdx    []int32
		tTerm   []string
		tFreq   []int32
		tLen    []int32
	)
	var tz textsearch.Tokenizer
	freq := map[string]int32{}
	var order []string
	for i, c := range chunks {
		idx[i], unit[i], start[i], end[i] = int32(i), string(c.Loc.Unit), int32(c.Loc.Start), int32(c.Loc.End)
		heading[i], text[i] = []byte(c.Heading), []byte(c.Text)
		hasvec[i] = c.Vector != nil
		lo[i] = int32(len(vecs))
		vecs = append(vecs, c.Vector...)
		hi[i] = int32(len(vecs))
		clear(freq)
		order = order[:0]
		var count int32
		add := func(t *textsearch.Token) bool {
			count++
			term := string(textsearch.Stem(t.Folded))
			if freq[term] == 0 {
				order = append(order, term)
			}
			freq[term]++
			return true
		}
		tz.Each(c.Text, add)
		tz.Each(c.Heading, add)
		length[i] = count
		p.tokens += int64(count)
		for _, term := range order {
			tIdx, tTerm, tFreq, tLen = append(tIdx, int32(i)), append(tTerm, term), append(tFreq, freq[term]), append(tLen, count)
		}
	}
	if vecs == nil {
		vecs = []float32{}
	}
	p.args = []any{vecs, idx, heading, unit, start, end, text, hasvec, lo, hi, length, tIdx, tTerm, tFreq, tLen}
	return p, nil
}

// queueRemove queues the statements that remove a document from set,
// adding the counts of p (nil for none) to the set's instead.
func (x *Index) queueRemove(b *pgx.Batch, set int64, path string, p *prepared) {
	var chunks, tokens int64
	if p != nil {
		chunks, tokens = int64(p.chunks), p.tokens
	}
	b.Queue(qUncount, x.vault, set, path, chunks, tokens)
	b.Queue(qDeleteTerms, x.vault, set, path)
	b.Queue(qDeleteChunks, x.vault, set, path)
}

// queuePut queues the statements that replace a document in set.
func (x *Index) queuePut(b *pgx.Batch, set int64, p *prepared) {
	x.queueRemove(b, set, p.doc.Path, p)
	if p.chunks > 0 {
		b.Queue(qInsertChunks, append([]any{x.vault, set, p.doc.Path}, p.args...)...)
	}
	b.Queue(qInsertDoc, x.vault, set, p.doc.Path, p.doc.Hash, p.meta, p.chunks, p.tokens, p.doc.Indexed)
}

// send sends a batch in tx and reports its first error.
func send(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// Put replaces a document and its chunks in one transaction, in the
// current set and in the one a rebuild is filling.
func (x *Index) Put(ctx context.Context, doc index.Doc, chunks []index.Chunk) error {
	p, err := prepare(doc, chunks)
	if err != nil {
		return err
	}
	err = x.db.Write(ctx, func(tx pgx.Tx) error {
		st, _, err := x.lock(ctx, tx, qLockBump)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, set := range st.live() {
			x.queuePut(b, set, p)
		}
		return send(ctx, tx, b)
	})
	if err != nil {
		return fmt.Errorf("index %s: %w", doc.Path, err)
	}
	return nil
}

// Delete removes a document and its chunks from every live set.
func (x *Index) Delete(ctx context.Context, path string) error {
	err := x.db.Write(ctx, func(tx pgx.Tx) error {
		st, ok, err := x.lock(ctx, tx, qLockBumpExisting)
		if err != nil || !ok {
			return err
		}
		b := &pgx.Batch{}
		for _, set := range st.live() {
			x.queueRemove(b, set, path, nil)
		}
		if st.building != nil { // the rebuild must not bring it back
			b.Queue(`INSERT INTO ix_gone (vault_id, set_id, path) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, x.vault, *st.building, path)
		}
		return send(ctx, tx, b)
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", path, err)
	}
	return nil
}

// queueDropSet queues the statements that delete every row of a set.
func (x *Index) queueDropSet(b *pgx.Batch, set int64) {
	for _, table := range []string{"ix_terms", "ix_chunks", "ix_docs", "ix_sets", "ix_gone"} {
		b.Queue("DELETE FROM "+table+" WHERE vault_id = $1 AND set_id = $2", x.vault, set)
	}
}

// Generation returns the vault's generation, which every Put, Delete and
// committed rebuild moves (0 for a vault never written).
func (x *Index) Generation(ctx context.Context) (int64, error) {
	var g int64
	err := x.queryRow(ctx, `SELECT generation FROM ix_state WHERE vault_id = $1`, []any{x.vault}, &g)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the generation of the index of vault %s: %w", x.vault, err)
	}
	return g, nil
}

// queryRow runs a read of one statement outside a transaction (one
// statement reads one snapshot) and scans its row, once more when it
// failed in a way that changed nothing.
func (x *Index) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	for try := 0; ; try++ {
		err := x.db.Pool.QueryRow(ctx, sql, args...).Scan(dest...)
		if err == nil || try > 0 || ctx.Err() != nil || !pgdb.Retryable(err, true) {
			return err
		}
	}
}

// Rebuild starts filling a new set, superseding a rebuild under way.
func (x *Index) Rebuild(ctx context.Context) (index.Builder, error) {
	bd := &builder{x: x}
	err := x.db.Write(ctx, func(tx pgx.Tx) error {
		st, _, err := x.lock(ctx, tx, qLock)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		if st.building != nil {
			x.queueDropSet(b, *st.building)
		}
		bd.set = st.next
		b.Queue(`DELETE FROM ix_gone WHERE vault_id = $1`, x.vault)
		b.Queue(`UPDATE ix_state SET building = $2::bigint, next_set = $2::bigint + 1 WHERE vault_id = $1`, x.vault, bd.set)
		b.Queue(`INSERT INTO ix_sets (vault_id, set_id, chunks, tokens) VALUES ($1, $2, 0, 0)`, x.vault, bd.set)
		return send(ctx, tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("start a rebuild of the index of vault %s: %w", x.vault, err)
	}
	return bd, nil
}

// builder is a rebuild in progress, known by its set, whose id no other
// rebuild of the vault has.
type builder struct {
	x   *Index
	set int64
}

// mine locks the vault's state in tx and checks that this rebuild has
// not been superseded, nor ended.
func (b *builder) mine(ctx context.Context, tx pgx.Tx) (state, error) {
	st, ok, err := b.x.lock(ctx, tx, qLockOnly)
	if err == nil && (!ok || st.building == nil || *st.building != b.set) {
		err = index.ErrSuperseded
	}
	return st, err
}

// Put adds a document to the new set unless a Put or Delete on the index
// has changed it since the rebuild began: that change is newer than the
// builder's copy.
func (b *builder) Put(ctx context.Context, doc index.Doc, chunks []index.Chunk) error {
	p, err := prepare(doc, chunks)
	if err != nil {
		return err
	}
	err = b.x.db.Write(ctx, func(tx pgx.Tx) error {
		if _, err := b.mine(ctx, tx); err != nil {
			return err
		}
		var changed bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ix_docs WHERE vault_id = $1 AND set_id = $2 AND path = $3)
			OR EXISTS (SELECT 1 FROM ix_gone WHERE vault_id = $1 AND set_id = $2 AND path = $3)`, b.x.vault, b.set, doc.Path).Scan(&changed)
		if err != nil || changed {
			return err
		}
		batch := &pgx.Batch{}
		b.x.queuePut(batch, b.set, p)
		return send(ctx, tx, batch)
	})
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", doc.Path, err)
	}
	return nil
}

// Commit makes the new set current and deletes the old one, in one
// transaction.
func (b *builder) Commit(ctx context.Context) error {
	err := b.x.db.Write(ctx, func(tx pgx.Tx) error {
		st, err := b.mine(ctx, tx)
		if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE ix_state SET current = $2, building = NULL, generation = generation + 1 WHERE vault_id = $1`, b.x.vault, b.set)
		b.x.queueDropSet(batch, st.current)
		batch.Queue(`DELETE FROM ix_gone WHERE vault_id = $1`, b.x.vault)
		return send(ctx, tx, batch)
	})
	if err != nil {
		return fmt.Errorf("commit the rebuild of the index of vault %s: %w", b.x.vault, err)
	}
	return nil
}

// Abort deletes the new set; a superseded or ended rebuild has nothing
// left to abort.
func (b *builder) Abort(ctx context.Context) error {
	err := b.x.db.Write(ctx, func(tx pgx.Tx) error {
		if _, err := b.mine(ctx, tx); errors.Is(err, index.ErrSuperseded) {
			return nil
		} else if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE ix_state SET building = NULL WHERE vault_id = $1`, b.x.vault)
		b.x.queueDropSet(batch, b.set)
		batch.Queue(`DELETE FROM ix_gone WHERE vault_id = $1`, b.x.vault)
		return send(ctx, tx, batch)
	})
	if err != nil {
		return fmt.Errorf("abort the rebuild of the index of vault %s: %w", b.x.vault, err)
	}
	return nil
}

// qCurrent is the vault's current set, for the reads ($1 is the vault).
const qCurrent = `(SELECT current FROM ix_state WHERE vault_id = $1)`

const docColumns = `path, hash, meta, chunks, indexed`

// Doc returns one document of the current set.
func (x *Index) Doc(ctx context.Context, path string) (index.Doc, error) {
	var r docRow
	err := x.queryRow(ctx, `SELECT `+docColumns+` FROM ix_docs WHERE vault_id = $1 AND set_id = `+qCurrent+` AND path = $2`,
		[]any{x.vault, path}, r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return index.Doc{}, fmt.Errorf("document %q: %w", path, index.ErrNotFound)
	}
	if err != nil {
		return index.Doc{}, fmt.Errorf("document %q: %w", path, err)
	}
	return r.doc()
}

// Docs returns every document of the current set, by path.
func (x *Index) Docs(ctx context.Context) ([]index.Doc, error) {
	var out []index.Doc
	err := x.db.Read(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT `+docColumns+` FROM ix_docs WHERE vault_id = $1 AND set_id = `+qCurrent+` ORDER BY path`, x.vault)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r docRow
			if err := rows.Scan(r.dest()...); err != nil {
				return err
			}
			d, err := r.doc()
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list the documents of the index of vault %s: %w", x.vault, err)
	}
	return out, nil
}

// docRow is a row of ix_docs as read.
type docRow struct {
	d    index.Doc
	meta *string
}

func (r *docRow) dest() []any {
	return []any{&r.d.Path, &r.d.Hash, &r.meta, &r.d.Chunks, &r.d.Indexed}
}

func (r *docRow) doc() (index.Doc, error) {
	d := r.d
	d.Indexed = d.Indexed.UTC()
	if r.meta != nil && *r.meta != "" && *r.meta != "null" {
		if err := json.Unmarshal([]byte(*r.meta), &d.Meta); err != nil {
			return d, fmt.Errorf("meta of %s: %w", d.Path, err)
		}
	}
	return d, nil
}

// chunkRow is a row of ix_chunks as read.
type chunkRow struct {
	c             index.Chunk
	heading, text []byte
}

func (r *chunkRow) dest() []any {
	return []any{&r.c.ID, &r.c.Doc, &r.c.Index, &r.heading, (*string)(&r.c.Loc.Unit), &r.c.Loc.Start, &r.c.Loc.End, &r.text}
}

func (r *chunkRow) chunk() index.Chunk {
	c := r.c
	c.Heading, c.Text = string(r.heading), string(r.text)
	return c
}

const chunkColumns = `id, doc, idx, heading, loc_unit, loc_start, loc_end, text`

// Chunk returns one chunk of the current set, in one statement.
func (x *Index) Chunk(ctx context.Context, id int64) (index.Chunk, error) {
	var r chunkRow
	err := x.queryRow(ctx, `SELECT `+chunkColumns+`, vector FROM ix_chunks WHERE id = $2 AND vault_id = $1 AND set_id = `+qCurrent,
		[]any{x.vault, id}, append(r.dest(), &r.c.Vector)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return index.Chunk{}, fmt.Errorf("chunk %d: %w", id, index.ErrNotFound)
	}
	if err != nil {
		return index.Chunk{}, fmt.Errorf("chunk %d: %w", id, err)
	}
	return r.chunk(), nil
}

// ChunksByID returns the chunks of the current set with these ids, in one
// statement.
func (x *Index) ChunksByID(ctx context.Context, ids []int64) (map[int64]index.Chunk, error) {
	out := make(map[int64]index.Chunk, len(ids))
	err := x.db.Read(ctx, func(tx pgx.Tx) error {
		clear(out)
		rows, err := tx.Query(ctx, `SELECT `+chunkColumns+`, vector FROM ix_chunks WHERE id = ANY($2) AND vault_id = $1 AND set_id = `+qCurrent, x.vault, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r chunkRow
			if err := rows.Scan(append(r.dest(), &r.c.Vector)...); err != nil {
				return err
			}
			out[r.c.ID] = r.chunk()
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("chunks %v: %w", ids, err)
	}
	return out, nil
}

// Chunks returns a document's chunks in order, with their vectors, or
// ErrNotFound.
func (x *Index) Chunks(ctx context.Context, path string) ([]index.Chunk, error) {
	var out []index.Chunk
	found := false
	err := x.db.Read(ctx, func(tx pgx.Tx) error {
		out, found = out[:0], false
		// The document's row, then its chunks: one statement, one snapshot.
		rows, err := tx.Query(ctx, `SELECT c.id, d.path, c.idx, c.heading, c.loc_unit, c.loc_start, c.loc_end, c.text, c.vector
			FROM ix_docs d LEFT JOIN ix_chunks c ON c.vault_id = d.vault_id AND c.set_id = d.set_id AND c.doc = d.path
			WHERE d.vault_id = $1 AND d.set_id = `+qCurrent+` AND d.path = $2 ORDER BY c.idx`, x.vault, path)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			found = true
			var id, idx, start, end *int64
			var unit *string
			var r chunkRow
			if err := rows.Scan(&id, &r.c.Doc, &idx, &r.heading, &unit, &start, &end, &r.text, &r.c.Vector); err != nil {
				return err
			}
			if id == nil { // a document without chunks
				continue
			}
			r.c.ID, r.c.Index = *id, int(*idx)
			r.c.Loc = index.Locator{Unit: index.Unit(*unit), Start: int(*start), End: int(*end)}
			out = append(out, r.chunk())
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("chunks of %q: %w", path, err)
	}
	if !found {
		return nil, fmt.Errorf("document %q: %w", path, index.ErrNotFound)
	}
	return out, nil
}

// snapshot runs fn in a read-only transaction that reads one snapshot
// (REPEATABLE READ), again when it failed in a way that changed nothing.
func (x *Index) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	for try := 0; ; try++ {
		err := pgx.BeginTxFunc(ctx, x.db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
		if err == nil || try >= 2 || ctx.Err() != nil || !pgdb.Retryable(err, true) {
			return err
		}
	}
}

// stream runs a query of one statement outside a transaction and calls
// scan for each row. It is not run again after a failure: rows may have
// reached the caller.
func (x *Index) stream(ctx context.Context, sql string, scan func(pgx.Rows) error) error {
	rows, err := x.db.Pool.Query(ctx, sql, x.vault)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EachText streams the current set's chunks' text and heading paths, by
// ascending id.
func (x *Index) EachText(ctx context.Context, fn func(id int64, text, heading string) error) error {
	var id int64
	var text, heading []byte
	err := x.stream(ctx, `SELECT id, text, heading FROM ix_chunks WHERE vault_id = $1 AND set_id = `+qCurrent+` ORDER BY id`,
		func(rows pgx.Rows) error {
			if err := rows.Scan(&id, &text, &heading); err != nil {
				return fmt.Errorf("read the chunks' text: %w", err)
			}
			return fn(id, string(text), string(heading))
		})
	return err
}

// EachVector streams the current set's chunks' vectors, by ascending id.
func (x *Index) EachVector(ctx context.Context, fn func(id int64, v []float32) error) error {
	return x.stream(ctx, `SELECT id, vector FROM ix_chunks WHERE vault_id = $1 AND set_id = `+qCurrent+` AND vector IS NOT NULL ORDER BY id`,
		func(rows pgx.Rows) error {
			var id int64
			var v []float32
			if err := rows.Scan(&id, &v); err != nil {
				return fmt.Errorf("read the chunks' vectors: %w", err)
			}
			return fn(id, v)
		})
}

// qPostings reads the postings of each term of $2 in the current set, by
// ascending chunk, as three arrays. Each term is looked up in the primary
// key on its own: OFFSET 0 keeps the subquery from being flattened into a
// join that the planner might run as a scan of the whole set.
const qPostings = `SELECT q.i, p.chunks, p.freqs, p.lengths FROM unnest($2::text[]) WITH ORDINALITY AS q(term, i)
	CROSS JOIN LATERAL (SELECT array_agg(chunk) AS chunks, array_agg(freq) AS freqs, array_agg(length) AS lengths
		FROM (SELECT chunk, freq, length FROM ix_terms t
			WHERE t.vault_id = $1 AND t.set_id = ` + qCurrent + ` AND t.term = q.term ORDER BY chunk OFFSET 0) AS s) AS p
	WHERE p.chunks IS NOT NULL`

// postings are the chunks holding one term, by ascending id, with the
// term's frequency in each and each one's length.
type postings struct {
	chunks         []int64
	freqs, lengths []int32
}

// Lexical ranks the chunks holding any word of query by BM25, as the
// sqliteindex's FTS5 table and the Lexicon do: the query's terms in
// order, a repeated one counted again; best first, ties by ascending id.
func (x *Index) Lexical(ctx context.Context, query string, n int) ([]index.Hit, error) {
	terms := textsearch.Tokenize(query)
	if len(terms) == 0 || n <= 0 {
		return nil, nil
	}
	distinct := slices.Clone(terms)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)

	var hits []index.Hit
	err := x.snapshot(ctx, func(tx pgx.Tx) error {
		hits = nil
		// The set's counts and the terms' postings, then the best chunks.
		b := &pgx.Batch{}
		b.Queue(`SELECT chunks, tokens FROM ix_sets WHERE vault_id = $1 AND set_id = `+qCurrent, x.vault)
		b.Queue(qPostings, x.vault, distinct)
		res := tx.SendBatch(ctx, b)
		defer res.Close()
		var docs, tokens int64
		if err := res.QueryRow().Scan(&docs, &tokens); errors.Is(err, pgx.ErrNoRows) {
			return nil // a vault never written
		} else if err != nil {
			return err
		}
		lists := make(map[string]postings, len(distinct))
		rows, err := res.Query()
		if err != nil {
			return err
		}
		var i int
		var p postings
		_, err = pgx.ForEachRow(rows, []any{&i, &p.chunks, &p.freqs, &p.lengths}, func() error {
			lists[distinct[i-1]] = p
			p = postings{}
			return nil
		})
		if err != nil {
			return err
		}
		if err := res.Close(); err != nil {
			return err
		}
		best := rank(terms, lists, docs, tokens, n)
		if len(best) == 0 {
			return nil
		}
		ids := make([]int64, len(best))
		for i, c := range best {
			ids[i] = c.Doc
		}
		byID := make(map[int64]index.Chunk, len(best))
		rows, err = tx.Query(ctx, `SELECT `+chunkColumns+` FROM ix_chunks WHERE vault_id = $1 AND id = ANY($2)`, x.vault, ids)
		if err != nil {
			return err
		}
		var r chunkRow
		if _, err := pgx.ForEachRow(rows, r.dest(), func() error { byID[r.c.ID] = r.chunk(); return nil }); err != nil {
			return err
		}
		for i, c := range best {
			ch, ok := byID[c.Doc]
			if !ok {
				return fmt.Errorf("chunk %d of the postings is missing", c.Doc)
			}
			hits = append(hits, index.Hit{Chunk: ch, Score: c.Score, Rank: i + 1})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lexical search in the index of vault %s: %w", x.vault, err)
	}
	return hits, nil
}

// rank scores the chunks of lists as index.Lexicon.Search does, in the
// same order of floating-point operations: term by term in query order,
// each part Weight(IDF(docs, chunks holding the term), frequency,
// Norm(length, tokens/docs)) added to the chunk's sum. It returns the best
// n, ties by ascending id.
func rank(terms []string, lists map[string]postings, docs, tokens int64, n int) []textsearch.Scored {
	if docs == 0 || len(lists) == 0 {
		return nil
	}
	// The chunks matched, by ascending id, and each posting's place there.
	var ids []int64
	for _, l := range lists {
		ids = append(ids, l.chunks...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	at := make(map[string][]int32, len(lists))
	for term, l := range lists {
		pos, lo := make([]int32, len(l.chunks)), 0
		for j, c := range l.chunks {
			k, _ := slices.BinarySearch(ids[lo:], c)
			lo += k
			pos[j] = int32(lo)
		}
		at[term] = pos
	}

	avgdl := float64(tokens) / float64(docs)
	score := make([]float64, len(ids))
	for _, term := range terms {
		l, ok := lists[term]
		if !ok {
			continue
		}
		idf := textsearch.IDF(docs, int64(len(l.chunks)))
		for j, p := range at[term] {
			part := textsearch.Weight(idf, float64(l.freqs[j]), textsearch.Norm(float64(l.lengths[j]), avgdl))
			score[p] = score[p] + part
		}
	}

	top := textsearch.NewTop(n)
	for p, id := range ids {
		top.Offer(id, score[p])
	}
	return top.Sorted()
}
