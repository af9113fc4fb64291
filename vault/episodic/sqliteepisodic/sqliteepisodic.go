// Package sqliteepisodic is the default store of an episodic vault: one
// SQLite file in the vault's data folder (modernc.org/sqlite, pure Go),
// opened as every ctxkit SQLite database is (internal/sqlitedb): WAL, one
// writer connection with immediate transactions and a pool of read
// connections, so several processes can write at once, and a schema
// version with ordered migration steps. [OpenMemory] opens a store with no
// file, for vaults kept in memory.
//
// Statements are rows that never change; versions are rows whose only
// change is the closing of their transaction interval (tx_to, from NULL to
// a time, exactly once); attestations, disputes and recalls are rows with
// their own transaction time. Times are INTEGER microseconds since the
// Unix epoch, UTC. An index over the versions by valid_from serves "what
// held at T" scans newest first (current and past beliefs alike: most
// versions are current), an entity index drives entity filters, and FTS5
// (porter stemming) ranks statements by BM25.
package sqliteepisodic

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// applicationID marks a SQLite file as an episodic store ("ctxe").
const applicationID = 0x63747865

// schema is the store's schema, as migration steps: step i moves it from
// version i to i+1, and the file's user_version says how many have run.
// Files written before the schema had its mark (application_id) are at
// version 1; they are marked when opened.
var schema = migrate.Schema[*sql.Tx]{
	Name:      "episodic store",
	Unmarked:  1,
	Recognize: sqlitedb.HasTables("statements", "versions"),
	Steps: []migrate.Step[*sql.Tx]{
		// 1: statements, their versions, entities, attestations, disputes,
		// recalls, the clock and the text index.
		sqlitedb.Exec(`
CREATE TABLE statements (
	n           INTEGER PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	content     TEXT NOT NULL,
	entities    TEXT NOT NULL,
	source      TEXT NOT NULL,
	confidence  REAL NOT NULL,
	salience    REAL NOT NULL,
	occurred_at INTEGER,
	metadata    TEXT,
	supersedes  INTEGER REFERENCES statements(n),
	revises     INTEGER REFERENCES statements(n),
	recorded_at INTEGER NOT NULL,
	embedding   BLOB
);
CREATE INDEX statements_supersedes ON statements(supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX statements_revises ON statements(revises) WHERE revises IS NOT NULL;
CREATE INDEX statements_salience ON statements(salience);
CREATE TABLE versions (
	seq        INTEGER PRIMARY KEY,
	statement  INTEGER NOT NULL REFERENCES statements(n),
	valid_from INTEGER NOT NULL,
	valid_to   INTEGER,
	tx_from    INTEGER NOT NULL,
	tx_to      INTEGER,
	state      TEXT NOT NULL,
	note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX versions_statement ON versions(statement, tx_from);
CREATE INDEX versions_valid ON versions(valid_from);
CREATE TABLE entities (
	norm      TEXT NOT NULL,
	statement INTEGER NOT NULL,
	PRIMARY KEY (norm, statement)
) WITHOUT ROWID;
CREATE TABLE attestations (
	statement INTEGER NOT NULL,
	at        INTEGER NOT NULL,
	source    TEXT NOT NULL,
	tx        INTEGER NOT NULL
);
CREATE INDEX attestations_statement ON attestations(statement, tx);
CREATE TABLE disputes (
	a    INTEGER NOT NULL,
	b    INTEGER NOT NULL,
	note TEXT NOT NULL,
	tx   INTEGER NOT NULL
);
CREATE INDEX disputes_a ON disputes(a);
CREATE INDEX disputes_b ON disputes(b);
CREATE TABLE recalls (
	statement INTEGER NOT NULL,
	tx        INTEGER NOT NULL
);
CREATE INDEX recalls_statement ON recalls(statement, tx);
CREATE TABLE clock (tx INTEGER NOT NULL);
INSERT INTO clock VALUES (0);
CREATE VIRTUAL TABLE statements_fts USING fts5(
	content, entities, content='statements', content_rowid='n', tokenize='porter unicode61'
);
INSERT INTO statements_fts(statements_fts, rank) VALUES ('automerge', 16);
`),
	},
}

// options are the store's database settings: a 32 MiB page cache per
// connection, and checkpoints every 8,192 pages of WAL.
var options = sqlitedb.Options{
	Schema:          schema,
	ApplicationID:   applicationID,
	WriterCache:     -32768,
	ReaderCache:     -32768,
	CheckpointPages: 8192,
}

// Store is an episodic store in one SQLite database. Its writers queue for
// the database's one writer connection.
type Store struct {
	db *sqlitedb.DB
}

var _ episodic.Store = (*Store)(nil)

// Open opens or creates the store at path, migrating an older schema and
// refusing a newer one (migrate.ErrNewer) or another application's file
// (migrate.ErrForeign).
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, options)
	if err != nil {
		return nil, fmt.Errorf("open episodes %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// OpenMemory opens a new, empty store that lives in memory, with no file,
// until it is closed.
func OpenMemory(ctx context.Context) (*Store, error) {
	db, err := sqlitedb.OpenMemory(ctx, options)
	if err != nil {
		return nil, fmt.Errorf("open episodes in memory: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func fromMicros(n int64) time.Time { return time.UnixMicro(n).UTC() }

func fromNull(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{episodic.ErrConflict}, args...)...)
}

// execer is what Apply and Import write through.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowOf returns the row number of statement id.
func rowOf(ctx context.Context, q execer, id string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, "SELECT n FROM statements WHERE id = ?", id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("episode %q: %w", id, episodic.ErrNotFound)
	}
	return n, err
}

// Apply commits c in one immediate transaction.
func (s *Store) Apply(ctx context.Context, c *episodic.Change, now time.Time) (time.Time, error) {
	var at int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		at, err = apply(ctx, tx, c, now)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return fromMicros(at), nil
}

// apply writes c in tx and returns its transaction time.
func apply(ctx context.Context, tx *sql.Tx, c *episodic.Change, now time.Time) (int64, error) {
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT tx FROM clock").Scan(&last); err != nil {
		return 0, fmt.Errorf("read the clock: %w", err)
	}
	at := max(micros(episodic.Normalize(now)), last+1)
	w := newWriter(ctx, tx, at)
	for _, e := range c.Expect {
		if err := w.expect(e, false); err != nil {
			return 0, err
		}
	}
	for _, e := range c.Close {
		if err := w.expect(e, true); err != nil {
			return 0, err
		}
	}
	for i := range c.Statements {
		if err := w.statement(&c.Statements[i], at); err != nil {
			return 0, err
		}
	}
	if err := w.flushStatements(); err != nil {
		return 0, err
	}
	for i := range c.Versions {
		v := c.Versions[i]
		v.RecordedAt, v.ClosedAt = fromMicros(at), nil
		if err := w.version(&v); err != nil {
			return 0, err
		}
	}
	if err := w.flush(&w.versions); err != nil {
		return 0, fmt.Errorf("insert versions: %w", err)
	}
	for _, a := range c.Attestations {
		if a.RecordedAt.IsZero() {
			a.RecordedAt = fromMicros(at)
		}
		if err := w.attestation(a); err != nil {
			return 0, err
		}
	}
	for _, d := range c.Disputes {
		d.RecordedAt = fromMicros(at)
		if err := w.dispute(d); err != nil {
			return 0, err
		}
	}
	for _, r := range c.Recalls {
		r.RecordedAt = fromMicros(at)
		if err := w.recall(r); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE clock SET tx = ?", at); err != nil {
		return 0, err
	}
	return at, nil
}

// writer inserts rows inside one transaction, resolving statement ids.
type writer struct {
	ctx   context.Context
	tx    *sql.Tx
	at    int64
	rows  map[string]int64
	stmts map[string]*sql.Stmt
	first int64 // the first statement row inserted and not yet in the text index
	next  int64 // the next statement row number, 0 until read

	statements, entities, versions batch
}

func newWriter(ctx context.Context, tx *sql.Tx, at int64) *writer {
	return &writer{ctx: ctx, tx: tx, at: at, rows: map[string]int64{},
		statements: batch{head: "INSERT INTO statements (n, id, content, entities, source, confidence, salience, occurred_at, metadata, supersedes, revises, recorded_at, embedding) VALUES ", cols: 13},
		entities:   batch{head: "INSERT OR IGNORE INTO entities (norm, statement) VALUES ", cols: 2},
		versions:   batch{head: "INSERT INTO versions (statement, valid_from, valid_to, tx_from, tx_to, state, note) VALUES ", cols: 7},
	}
}

func (w *writer) row(id string) (int64, error) {
	if n, ok := w.rows[id]; ok {
		return n, nil
	}
	n, err := rowOf(w.ctx, w.tx, id)
	if err == nil {
		w.rows[id] = n
	}
	return n, err
}

// prepared caches a statement for the transaction: batches insert many
// rows of each kind.
func (w *writer) exec(query string, args ...any) (sql.Result, error) {
	if w.stmts == nil {
		w.stmts = map[string]*sql.Stmt{}
	}
	st, ok := w.stmts[query]
	if !ok {
		var err error
		if st, err = w.tx.PrepareContext(w.ctx, query); err != nil {
			return nil, err
		}
		w.stmts[query] = st
	}
	return st.ExecContext(w.ctx, args...)
}

func (w *writer) expect(e episodic.Expect, close bool) error {
	n, err := w.row(e.Statement)
	if err != nil {
		return err
	}
	q := "UPDATE versions SET tx_to = ? WHERE seq = ? AND statement = ? AND tx_to IS NULL"
	args := []any{w.at, e.Seq, n}
	if !close {
		q = "UPDATE versions SET tx_to = tx_to WHERE seq = ? AND statement = ? AND tx_to IS NULL"
		args = args[1:]
	}
	res, err := w.exec(q, args...)
	if err != nil {
		return fmt.Errorf("check episode %s: %w", e.Statement, err)
	}
	if k, _ := res.RowsAffected(); k != 1 {
		return conflict("episode %s changed since version %d was read", e.Statement, e.Seq)
	}
	return nil
}

func (w *writer) statement(st *episodic.Statement, recorded int64) error {
	ents, err := json.Marshal(st.Entities)
	if err != nil {
		return err
	}
	var meta any
	if len(st.Metadata) > 0 {
		b, err := json.Marshal(st.Metadata)
		if err != nil {
			return fmt.Errorf("%w: metadata of %s: %v", episodic.ErrInvalid, st.ID, err)
		}
		meta = string(b)
	}
	var supersedes, revises any
	if st.Supersedes != "" {
		if supersedes, err = w.row(st.Supersedes); err != nil {
			return err
		}
	}
	if st.Revises != "" {
		if revises, err = w.row(st.Revises); err != nil {
			return err
		}
	}
	if _, dup := w.rows[st.ID]; dup {
		return conflict("episode %s exists", st.ID)
	}
	// Row numbers are assigned here rather than by SQLite, so that rows
	// go in many to an INSERT: the transaction is immediate, nobody else
	// is inserting.
	if w.next == 0 {
		if err := w.tx.QueryRowContext(w.ctx, "SELECT coalesce(max(n), 0) + 1 FROM statements").Scan(&w.next); err != nil {
			return err
		}
	}
	n := w.next
	w.next++
	w.rows[st.ID] = n
	if w.first == 0 {
		w.first = n
	}
	if err := w.add(&w.statements, n, st.ID, st.Content, string(ents), st.Source, st.Confidence, st.Salience,
		microsPtr(st.OccurredAt), meta, supersedes, revises, recorded, embed.VectorBytes(st.Embedding)); err != nil {
		return err
	}
	for _, e := range st.Entities {
		if err := w.add(&w.entities, episodic.EntityKey(e), n); err != nil {
			return fmt.Errorf("insert the entities of %s: %w", st.ID, err)
		}
	}
	return nil
}

// batch buffers the rows of a multi-row INSERT: one statement per hundred
// rows instead of one per row.
type batch struct {
	head string // INSERT ... VALUES
	cols int
	args []any
}

const batchRows = 100

func (w *writer) add(b *batch, args ...any) error {
	b.args = append(b.args, args...)
	if len(b.args) >= batchRows*b.cols {
		return w.flush(b)
	}
	return nil
}

func (w *writer) flush(b *batch) error {
	if len(b.args) == 0 {
		return nil
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", b.cols), ", ") + "), "
	q := b.head + strings.TrimSuffix(strings.Repeat(tuple, len(b.args)/b.cols), ", ")
	_, err := w.exec(q, b.args...)
	b.args = b.args[:0]
	if err != nil && strings.Contains(err.Error(), "UNIQUE") {
		return conflict("an episode id exists already")
	}
	return err
}

// flushStatements writes the buffered statements and their entities and
// indexes their text.
func (w *writer) flushStatements() error {
	if err := w.flush(&w.statements); err != nil {
		return fmt.Errorf("insert episodes: %w", err)
	}
	if err := w.flush(&w.entities); err != nil {
		return fmt.Errorf("insert entities: %w", err)
	}
	return w.indexText()
}

// indexText adds the statements inserted so far to the full-text index,
// in one statement: FTS5 flushes its pending terms at every statement
// savepoint, so a row at a time (a trigger) would write a segment per row.
func (w *writer) indexText() error {
	if w.first == 0 {
		return nil
	}
	_, err := w.tx.ExecContext(w.ctx, "INSERT INTO statements_fts(rowid, content, entities) SELECT n, content, entities FROM statements WHERE n >= ?", w.first)
	if err != nil {
		return fmt.Errorf("index the statements' text: %w", err)
	}
	w.first = 0
	return nil
}

func (w *writer) version(v *episodic.Version) error {
	n, err := w.row(v.Statement)
	if err != nil {
		return err
	}
	err = w.add(&w.versions, n, micros(v.ValidFrom), microsPtr(v.ValidTo), micros(v.RecordedAt), microsPtr(v.ClosedAt), string(v.State), v.Note)
	if err != nil {
		return fmt.Errorf("insert a version of %s: %w", v.Statement, err)
	}
	return nil
}

func (w *writer) attestation(a episodic.Attestation) error {
	n, err := w.row(a.Statement)
	if err != nil {
		return err
	}
	_, err = w.exec("INSERT INTO attestations (statement, at, source, tx) VALUES (?, ?, ?, ?)", n, micros(a.At), a.Source, micros(a.RecordedAt))
	return err
}

func (w *writer) dispute(d episodic.Dispute) error {
	a, err := w.row(d.A)
	if err != nil {
		return err
	}
	b, err := w.row(d.B)
	if err != nil {
		return err
	}
	_, err = w.exec("INSERT INTO disputes (a, b, note, tx) VALUES (?, ?, ?, ?)", a, b, d.Note, micros(d.RecordedAt))
	return err
}

func (w *writer) recall(r episodic.Recall) error {
	n, err := w.row(r.Statement)
	if err != nil {
		return err
	}
	_, err = w.exec("INSERT INTO recalls (statement, tx) VALUES (?, ?)", n, micros(r.RecordedAt))
	return err
}

// viewColumns are the columns of an episode view: s is the statement, v
// the version held.
const viewColumns = `s.n, s.id, s.content, s.entities, s.source, s.confidence, s.salience, s.occurred_at, s.metadata,
	(SELECT id FROM statements WHERE n = s.supersedes), (SELECT id FROM statements WHERE n = s.revises), s.recorded_at,
	v.seq, v.valid_from, v.valid_to, v.tx_from, v.tx_to, v.state, v.note`

// row is a scanned view with the statement's row number.
type row struct {
	n int64
	e episodic.Episode
}

func scanView(sc interface{ Scan(...any) error }, extra ...any) (row, error) {
	var r row
	var ents string
	var occurred, validTo, txTo sql.NullInt64
	var meta, supersedes, revises sql.NullString
	var recorded, validFrom, txFrom int64
	var state string
	e := &r.e
	dest := append([]any{&r.n, &e.ID, &e.Content, &ents, &e.Source, &e.Confidence, &e.Salience, &occurred, &meta,
		&supersedes, &revises, &recorded, &e.Seq, &validFrom, &validTo, &txFrom, &txTo, &state, &e.Note}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(ents), &e.Entities); err != nil {
		return r, fmt.Errorf("entities of %s: %w", e.ID, err)
	}
	if meta.Valid {
		if err := json.Unmarshal([]byte(meta.String), &e.Metadata); err != nil {
			return r, fmt.Errorf("metadata of %s: %w", e.ID, err)
		}
	}
	e.OccurredAt = fromNull(occurred)
	e.Supersedes, e.Revises = supersedes.String, revises.String
	e.FirstRecordedAt = fromMicros(recorded)
	e.Version.Statement = e.ID
	e.ValidFrom, e.ValidTo = fromMicros(validFrom), fromNull(validTo)
	e.RecordedAt, e.ClosedAt = fromMicros(txFrom), fromNull(txTo)
	e.State = episodic.State(state)
	if e.State != episodic.Open {
		e.InvalidatedAt = &e.RecordedAt
	}
	return r, nil
}

// conditions builds the WHERE terms of f for the version v of statement s.
func conditions(f *episodic.Filter) (string, []any) {
	var terms []string
	var args []any
	if f.KnownAt == nil {
		terms = append(terms, "v.tx_to IS NULL")
	} else {
		k := micros(*f.KnownAt)
		terms = append(terms, "v.tx_from <= ? AND (v.tx_to IS NULL OR v.tx_to > ?)")
		args = append(args, k, k)
	}
	if f.ValidAt != nil {
		t := micros(*f.ValidAt)
		terms = append(terms, "v.valid_from <= ? AND (v.valid_to IS NULL OR v.valid_to > ?)")
		args = append(args, t, t)
	}
	if f.Source != "" {
		terms = append(terms, "s.source = ?")
		args = append(args, f.Source)
	}
	if f.MinConfidence > 0 {
		terms = append(terms, "s.confidence >= ?")
		args = append(args, f.MinConfidence)
	}
	for k, val := range f.Meta {
		b, _ := json.Marshal(val)
		terms = append(terms, "json_extract(s.metadata, ?) IS json_extract(?, '$')")
		args = append(args, "$."+jsonKey(k), string(b))
	}
	if f.Disputed {
		other := "ov.tx_to IS NULL"
		var oargs []any
		dtx := "1"
		if f.KnownAt != nil {
			k := micros(*f.KnownAt)
			other = "ov.tx_from <= ? AND (ov.tx_to IS NULL OR ov.tx_to > ?)"
			oargs = []any{k, k}
			dtx = "d.tx <= ?"
		}
		sub := func(self, peer string) string {
			return fmt.Sprintf("EXISTS (SELECT 1 FROM disputes d JOIN versions ov ON ov.statement = d.%s WHERE d.%s = s.n AND %s AND %s AND ov.state = 'open')", peer, self, dtx, other)
		}
		terms = append(terms, "v.state = 'open' AND ("+sub("a", "b")+" OR "+sub("b", "a")+")")
		for range 2 {
			if f.KnownAt != nil {
				args = append(args, micros(*f.KnownAt))
			}
			args = append(args, oargs...)
		}
	}
	return strings.Join(terms, " AND "), args
}

// jsonKey quotes a metadata key for a JSON path.
func jsonKey(k string) string {
	b, _ := json.Marshal(k)
	return string(b)
}

// entityRows is the materialised set of statements naming any of f's
// entities; the query starts from it so that the entity index, not the
// time index, drives the plan.
func entityRows(f *episodic.Filter) (string, []any) {
	args := make([]any, len(f.Entities))
	for i, e := range f.Entities {
		args[i] = episodic.EntityKey(e)
	}
	return "WITH cand(n) AS MATERIALIZED (SELECT DISTINCT statement FROM entities WHERE norm IN (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + ")) ", args
}

// Scan iterates the episodes f selects.
func (s *Store) Scan(ctx context.Context, f episodic.Filter, order episodic.Order, fn func(*episodic.Episode) bool) error {
	where, args := conditions(&f)
	orderBy := "v.valid_from DESC, v.seq DESC"
	columns := viewColumns
	if f.WithEmbeddings {
		columns += ", s.embedding"
	}
	if order == episodic.BySalience {
		orderBy = "s.salience DESC, v.valid_from DESC, v.seq DESC"
	}
	var q string
	if len(f.Entities) > 0 {
		with, eargs := entityRows(&f)
		q = with + "SELECT " + columns + " FROM cand CROSS JOIN versions v ON v.statement = cand.n JOIN statements s ON s.n = v.statement WHERE " + where + " ORDER BY " + orderBy
		args = append(eargs, args...)
	} else {
		q = "SELECT " + columns + " FROM versions v JOIN statements s ON s.n = v.statement WHERE " + where + " ORDER BY " + orderBy
	}
	done, err := s.db.ReadTurn(ctx)
	if err != nil {
		return err
	}
	defer done()
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("scan episodes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var emb []byte
		extra := []any{}
		if f.WithEmbeddings {
			extra = append(extra, &emb)
		}
		r, err := scanView(rows, extra...)
		r.e.Embedding = embed.VectorFromBytes(emb)
		if err != nil {
			return err
		}
		if !fn(&r.e) {
			break
		}
	}
	return rows.Err()
}

// Search ranks the episodes f selects that match any word of text by
// BM25 over their content and entities.
func (s *Store) Search(ctx context.Context, f episodic.Filter, text string, limit int) ([]episodic.Scored, error) {
	match := textsearch.MatchAny(text)
	if match == "" || limit <= 0 {
		return nil, nil
	}
	where, args := conditions(&f)
	q := "SELECT " + viewColumns + ", m.rank FROM statements_fts m CROSS JOIN versions v ON v.statement = m.rowid JOIN statements s ON s.n = m.rowid WHERE statements_fts MATCH ? AND " + where
	args = append([]any{match}, args...)
	if len(f.Entities) > 0 {
		with, eargs := entityRows(&f)
		q = with + q + " AND m.rowid IN (SELECT n FROM cand)"
		args = append(eargs, args...)
	}
	q += " ORDER BY m.rank, v.seq DESC LIMIT ?"
	args = append(args, limit)
	done, err := s.db.ReadTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search episodes: %w", err)
	}
	defer rows.Close()
	var out []episodic.Scored
	for rows.Next() {
		var rank float64
		r, err := scanView(rows, &rank)
		if err != nil {
			return nil, err
		}
		out = append(out, episodic.Scored{Episode: r.e, BM25: -rank})
	}
	return out, rows.Err()
}

// Episodes returns the episodes f selects among ids.
func (s *Store) Episodes(ctx context.Context, f episodic.Filter, ids []string) ([]episodic.Episode, error) {
	var out []episodic.Episode
	where, args := conditions(&f)
	for len(ids) > 0 {
		part := ids[:min(len(ids), 500)]
		ids = ids[len(part):]
		in := make([]any, len(part))
		for i, id := range part {
			in[i] = id
		}
		q := "SELECT " + viewColumns + " FROM statements s CROSS JOIN versions v ON v.statement = s.n WHERE s.id IN (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ") + ") AND " + where
		if len(f.Entities) > 0 {
			with, eargs := entityRows(&f)
			q = with + q + " AND s.n IN (SELECT n FROM cand)"
			in = append(eargs, in...)
		}
		rows, err := s.db.Reader().QueryContext(ctx, q, append(in, args...)...)
		if err != nil {
			return nil, fmt.Errorf("read episodes: %w", err)
		}
		for rows.Next() {
			r, err := scanView(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, r.e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get returns one episode as held at known.
func (s *Store) Get(ctx context.Context, id string, known *time.Time) (episodic.Episode, bool, error) {
	f := episodic.Filter{KnownAt: known}
	where, args := conditions(&f)
	r, err := scanView(s.db.Reader().QueryRowContext(ctx, "SELECT "+viewColumns+" FROM statements s CROSS JOIN versions v ON v.statement = s.n WHERE s.id = ? AND "+where, append([]any{id}, args...)...))
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := rowOf(ctx, s.db.Reader(), id); err != nil {
			return episodic.Episode{}, false, err
		}
		return episodic.Episode{}, false, nil
	}
	if err != nil {
		return episodic.Episode{}, false, err
	}
	eps := []episodic.Episode{r.e}
	err = s.Annotate(ctx, eps, known)
	return eps[0], true, err
}

// Annotate fills what is derived from the rest of the store, for all the
// episodes in one query.
func (s *Store) Annotate(ctx context.Context, eps []episodic.Episode, known *time.Time) error {
	if len(eps) == 0 {
		return nil
	}
	k := int64(math.MaxInt64)
	if known != nil {
		k = micros(*known)
	}
	args := []any{k}
	at := map[string]int{}
	for i := range eps {
		args = append(args, eps[i].ID)
		at[eps[i].ID] = i
	}
	// The disputes of a statement open at k: recorded by then, with the
	// other statement open at k.
	q := `SELECT s.id,
		(SELECT x.id FROM statements x WHERE x.supersedes = s.n AND x.recorded_at <= ?1 LIMIT 1),
		(SELECT count(*) FROM attestations a WHERE a.statement = s.n AND a.tx <= ?1),
		(SELECT max(a.at) FROM attestations a WHERE a.statement = s.n AND a.tx <= ?1),
		(SELECT count(*) FROM recalls r WHERE r.statement = s.n AND r.tx <= ?1),
		(SELECT max(r.tx) FROM recalls r WHERE r.statement = s.n AND r.tx <= ?1),
		(SELECT group_concat(id, ' ') FROM (SELECT DISTINCT o.id AS id FROM disputes d
			JOIN statements o ON o.n = CASE WHEN d.a = s.n THEN d.b ELSE d.a END
			JOIN versions ov ON ov.statement = o.n
			WHERE (d.a = s.n OR d.b = s.n) AND d.tx <= ?1 AND ov.tx_from <= ?1 AND (ov.tx_to IS NULL OR ov.tx_to > ?1) AND ov.state = 'open'
			ORDER BY o.id))
		FROM statements s WHERE s.id IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(eps)), ", ") + ")"
	return s.each(ctx, q, args, func(sc func(...any) error) error {
		var id string
		var succ, disputes sql.NullString
		var lastConfirmed, lastRecalled sql.NullInt64
		var confirmed, recalled int
		if err := sc(&id, &succ, &confirmed, &lastConfirmed, &recalled, &lastRecalled, &disputes); err != nil {
			return err
		}
		e := &eps[at[id]]
		e.SupersededBy = succ.String
		e.ConfirmedCount, e.LastConfirmedAt = confirmed, fromNull(lastConfirmed)
		e.RecallCount, e.LastRecalledAt = recalled, fromNull(lastRecalled)
		e.DisputedWith = nil
		if e.State == episodic.Open && disputes.String != "" {
			e.DisputedWith = strings.Fields(disputes.String)
		}
		return nil
	})
}

// Record returns everything about one statement.
func (s *Store) Record(ctx context.Context, id string) (*episodic.Record, error) {
	n, err := rowOf(ctx, s.db.Reader(), id)
	if err != nil {
		return nil, err
	}
	return s.record(ctx, n)
}

func (s *Store) record(ctx context.Context, n int64) (*episodic.Record, error) {
	rec := &episodic.Record{}
	rows, err := s.db.Reader().QueryContext(ctx, "SELECT "+viewColumns+", s.embedding FROM statements s JOIN versions v ON v.statement = s.n WHERE s.n = ? ORDER BY v.seq", n)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var emb []byte
		r, err := scanView(rows, &emb)
		if err != nil {
			rows.Close()
			return nil, err
		}
		if len(rec.Versions) == 0 {
			rec.Statement = r.e.Statement
			rec.Statement.Embedding = embed.VectorFromBytes(emb)
		}
		rec.Versions = append(rec.Versions, r.e.Version)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	id := rec.Statement.ID
	if err := s.each(ctx, "SELECT at, source, tx FROM attestations WHERE statement = ? ORDER BY tx, rowid", []any{n}, func(sc func(...any) error) error {
		var at, tx int64
		a := episodic.Attestation{Statement: id}
		if err := sc(&at, &a.Source, &tx); err != nil {
			return err
		}
		a.At, a.RecordedAt = fromMicros(at), fromMicros(tx)
		rec.Attestations = append(rec.Attestations, a)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.each(ctx, `SELECT sa.id, sb.id, d.note, d.tx FROM disputes d JOIN statements sa ON sa.n = d.a JOIN statements sb ON sb.n = d.b
		WHERE d.a = ?1 OR d.b = ?1 ORDER BY d.tx, d.rowid`, []any{n}, func(sc func(...any) error) error {
		var d episodic.Dispute
		var tx int64
		if err := sc(&d.A, &d.B, &d.Note, &tx); err != nil {
			return err
		}
		d.RecordedAt = fromMicros(tx)
		rec.Disputes = append(rec.Disputes, d)
		return nil
	}); err != nil {
		return nil, err
	}
	err = s.each(ctx, "SELECT tx FROM recalls WHERE statement = ? ORDER BY tx, rowid", []any{n}, func(sc func(...any) error) error {
		var tx int64
		if err := sc(&tx); err != nil {
			return err
		}
		rec.Recalls = append(rec.Recalls, episodic.Recall{Statement: id, RecordedAt: fromMicros(tx)})
		return nil
	})
	return rec, err
}

// each runs a query and calls fn with a scanner for each row.
func (s *Store) each(ctx context.Context, q string, args []any, fn func(scan func(...any) error) error) error {
	rows, err := s.db.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Successors returns the statements that supersede or revise id.
func (s *Store) Successors(ctx context.Context, id string) ([]string, error) {
	n, err := rowOf(ctx, s.db.Reader(), id)
	if err != nil {
		return nil, err
	}
	var out []string
	err = s.each(ctx, "SELECT id FROM statements WHERE supersedes = ?1 OR revises = ?1 ORDER BY n", []any{n}, func(sc func(...any) error) error {
		var id string
		if err := sc(&id); err != nil {
			return err
		}
		out = append(out, id)
		return nil
	})
	return out, err
}

// EachVector streams the embeddings.
func (s *Store) EachVector(ctx context.Context, fn func(id string, v []float32) error) error {
	return s.each(ctx, "SELECT id, embedding FROM statements WHERE embedding IS NOT NULL ORDER BY n", nil, func(sc func(...any) error) error {
		var id string
		var b []byte
		if err := sc(&id, &b); err != nil {
			return err
		}
		return fn(id, embed.VectorFromBytes(b))
	})
}

// Entities counts the episodes f selects per entity.
func (s *Store) Entities(ctx context.Context, f episodic.Filter) ([]episodic.EntityCount, error) {
	where, args := conditions(&f)
	var counter episodic.EntityCounter
	err := s.each(ctx, "SELECT s.entities FROM versions v JOIN statements s ON s.n = v.statement WHERE "+where+" AND s.entities != '[]'", args, func(sc func(...any) error) error {
		var raw string
		if err := sc(&raw); err != nil {
			return err
		}
		return counter.AddJSON(raw)
	})
	return counter.Counts(), err
}

// Stats counts the statements held at known.
func (s *Store) Stats(ctx context.Context, known *time.Time) (episodic.Stats, error) {
	f := episodic.Filter{KnownAt: known}
	where, args := conditions(&f)
	var st episodic.Stats
	err := s.db.Reader().QueryRowContext(ctx, "SELECT count(*), count(*) FILTER (WHERE v.state = 'open') FROM versions v JOIN statements s ON s.n = v.statement WHERE "+where, args...).Scan(&st.Total, &st.Open)
	if err != nil {
		return st, err
	}
	st.Closed = st.Total - st.Open
	f.Disputed = true
	where, args = conditions(&f)
	err = s.db.Reader().QueryRowContext(ctx, "SELECT count(*) FROM versions v JOIN statements s ON s.n = v.statement WHERE "+where, args...).Scan(&st.Disputed)
	return st, err
}

// Export calls fn with every record, oldest statement first.
func (s *Store) Export(ctx context.Context, fn func(*episodic.Record) error) error {
	var ns []int64
	if err := s.each(ctx, "SELECT n FROM statements ORDER BY n", nil, func(sc func(...any) error) error {
		var n int64
		err := sc(&n)
		ns = append(ns, n)
		return err
	}); err != nil {
		return err
	}
	for _, n := range ns {
		rec, err := s.record(ctx, n)
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

// Import inserts records as given, in one transaction.
func (s *Store) Import(ctx context.Context, recs []*episodic.Record) error {
	return s.db.Write(ctx, func(tx *sql.Tx) error { return importRecords(ctx, tx, recs) })
}

// importRecords inserts records in tx.
func importRecords(ctx context.Context, tx *sql.Tx, recs []*episodic.Record) error {
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT tx FROM clock").Scan(&last); err != nil {
		return err
	}
	w := newWriter(ctx, tx, 0)
	for _, rec := range recs {
		if len(rec.Versions) == 0 {
			return fmt.Errorf("%w: episode %s has no version", episodic.ErrInvalid, rec.Statement.ID)
		}
		if err := w.statement(&rec.Statement, micros(rec.Versions[0].RecordedAt)); err != nil {
			return err
		}
	}
	if err := w.flushStatements(); err != nil {
		return err
	}
	// Versions go in in their original order (which breaks ties between
	// equal valid times); attestations, disputes and recalls may name
	// statements later in the file, so they go in once every statement is.
	var versions []episodic.Version
	for _, rec := range recs {
		for _, v := range rec.Versions {
			v.Statement = rec.Statement.ID
			versions = append(versions, v)
		}
	}
	slices.SortStableFunc(versions, func(a, b episodic.Version) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range versions {
		v := &versions[i]
		last = max(last, micros(v.RecordedAt))
		if v.ClosedAt != nil {
			last = max(last, micros(*v.ClosedAt))
		}
		if err := w.version(v); err != nil {
			return err
		}
	}
	if err := w.flush(&w.versions); err != nil {
		return fmt.Errorf("insert versions: %w", err)
	}
	for _, rec := range recs {
		for _, a := range rec.Attestations {
			a.Statement = rec.Statement.ID
			last = max(last, micros(a.RecordedAt))
			if err := w.attestation(a); err != nil {
				return err
			}
		}
		for _, d := range rec.Disputes {
			if d.A != rec.Statement.ID {
				continue // recorded once, with its first statement
			}
			last = max(last, micros(d.RecordedAt))
			if err := w.dispute(d); err != nil {
				return err
			}
		}
		for _, r := range rec.Recalls {
			r.Statement = rec.Statement.ID
			last = max(last, micros(r.RecordedAt))
			if err := w.recall(r); err != nil {
				return err
			}
		}
	}
	_, err := tx.ExecContext(ctx, "UPDATE clock SET tx = ?", last)
	return err
}
