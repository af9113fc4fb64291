// Package pgepisodic is the PostgreSQL store of episodic vaults: every
// vault of a database in the same tables (ep_…), its rows keyed by
// vault_id, in the schema and pool every PostgreSQL store of ctxkit shares
// (internal/pgdb).
//
// The rows are those of sqliteepisodic: statements that never change,
// versions whose only change is the closing of their transaction interval
// (tx_to, from NULL to a time, exactly once), attestations, disputes and
// recalls with their own transaction time. Times are timestamptz, whose
// resolution is episodic.Precision.
//
// Writers of one vault serialise on the vault's row of ep_clock, which each
// write locks first (an upsert) and which holds the last transaction time
// and the counters of the vault's statements and versions: transaction
// times are strictly increasing and sequence numbers follow commit order
// across processes, and the expected versions a change relies on are
// checked after any writer before it committed.
//
// Text search ranks exactly as sqliteepisodic's FTS5 table: the terms of
// a statement's content and entities (textsearch.Tokenize, over the same
// text FTS5 indexes) are kept with it with their frequencies, and with its
// entity keys in an array under a GIN index (keys, prefixed by a hash of
// the vault); its length is stored with it, the vault's totals in
// ep_clock and each term's document count in ep_df, and Search computes FTS5's bm25() from them in Go
// (textsearch.IDF, Norm and Weight, in FTS5's order of operations).
package pgepisodic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ctxkit/ctxkit/internal/pgdb"
	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// Component is the name the schema's version is recorded under.
const Component = "episodes"

// schema creates the tables. Text keys are COLLATE "C": compared and
// ordered bytewise, as SQLite does.
const schema = `
CREATE TABLE ep_clock (
	vault_id text COLLATE "C" PRIMARY KEY,
	last     timestamptz NOT NULL,
	seq      bigint NOT NULL,
	n        bigint NOT NULL,
	docs     bigint NOT NULL,
	tokens   bigint NOT NULL
);
CREATE TABLE ep_statements (
	vault_id    text COLLATE "C" NOT NULL,
	n           bigint NOT NULL,
	id          text COLLATE "C" NOT NULL,
	content     text NOT NULL,
	entities    text NOT NULL,
	source      text NOT NULL,
	confidence  float8 NOT NULL,
	salience    float8 NOT NULL,
	occurred_at timestamptz,
	metadata    jsonb,
	supersedes  bigint,
	revises     bigint,
	recorded_at timestamptz NOT NULL,
	embedding   real[],
	length      integer NOT NULL,
	keys        text[] COLLATE "C" NOT NULL,
	freqs       integer[] NOT NULL,
	PRIMARY KEY (vault_id, n),
	CONSTRAINT ep_statements_id UNIQUE (vault_id, id)
);
CREATE INDEX ep_statements_supersedes ON ep_statements (vault_id, supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX ep_statements_revises ON ep_statements (vault_id, revises) WHERE revises IS NOT NULL;
CREATE INDEX ep_statements_salience ON ep_statements (vault_id, salience);
CREATE TABLE ep_versions (
	vault_id   text COLLATE "C" NOT NULL,
	seq        bigint NOT NULL,
	statement  bigint NOT NULL,
	valid_from timestamptz NOT NULL,
	valid_to   timestamptz,
	tx_from    timestamptz NOT NULL,
	tx_to      timestamptz,
	state      text NOT NULL,
	note       text NOT NULL,
	PRIMARY KEY (vault_id, seq)
);
CREATE INDEX ep_versions_statement ON ep_versions (vault_id, statement, tx_from);
CREATE INDEX ep_versions_valid ON ep_versions (vault_id, valid_from, seq);
CREATE INDEX ep_statements_keys ON ep_statements USING gin (keys) WITH (gin_pending_list_limit = 512);
CREATE TABLE ep_df (
	vault_id text COLLATE "C" NOT NULL,
	term     text COLLATE "C" NOT NULL,
	df       bigint NOT NULL,
	PRIMARY KEY (vault_id, term)
);
CREATE TABLE ep_attestations (
	vault_id  text COLLATE "C" NOT NULL,
	k         bigint GENERATED ALWAYS AS IDENTITY,
	statement bigint NOT NULL,
	at        timestamptz NOT NULL,
	source    text NOT NULL,
	tx        timestamptz NOT NULL
);
CREATE INDEX ep_attestations_statement ON ep_attestations (vault_id, statement, tx);
CREATE TABLE ep_disputes (
	vault_id text COLLATE "C" NOT NULL,
	k        bigint GENERATED ALWAYS AS IDENTITY,
	a        bigint NOT NULL,
	b        bigint NOT NULL,
	note     text NOT NULL,
	tx       timestamptz NOT NULL
);
CREATE INDEX ep_disputes_a ON ep_disputes (vault_id, a);
CREATE INDEX ep_disputes_b ON ep_disputes (vault_id, b);
CREATE TABLE ep_recalls (
	vault_id  text COLLATE "C" NOT NULL,
	k         bigint GENERATED ALWAYS AS IDENTITY,
	statement bigint NOT NULL,
	tx        timestamptz NOT NULL
);
CREATE INDEX ep_recalls_statement ON ep_recalls (vault_id, statement, tx);
`

// Migrate creates or updates the tables of the episodic stores in db's
// schema; run it once per process before New.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return pgdb.Migrate(ctx, db, Component, pgdb.Exec(schema))
}

// Store is the episodic store of one vault in a PostgreSQL database. It
// is safe for concurrent use, by several processes too.
type Store struct {
	db     *pgdb.DB
	vault  string
	prefix string // of the vault's index keys
}

var _ episodic.Store = (*Store)(nil)

// New returns the store of vault vaultID in db (migrated by Migrate). It
// costs nothing: the vault's rows are made by its first write.
func New(db *pgdb.DB, vaultID string) *Store {
	return &Store{db: db, vault: vaultID, prefix: keyPrefix(vaultID)}
}

// Close releases nothing: the pool belongs to the caller.
func (s *Store) Close() error { return nil }

// Drop deletes every row of vault vaultID.
func Drop(ctx context.Context, db *pgdb.DB, vaultID string) error {
	err := db.Write(ctx, func(tx pgx.Tx) error {
		// The clock row first: writers of the vault wait for it.
		for _, table := range []string{"ep_clock", "ep_statements", "ep_versions", "ep_df", "ep_attestations", "ep_disputes", "ep_recalls"} {
			if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE vault_id = $1", vaultID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("drop the episodes of vault %s: %w", vaultID, err)
	}
	return nil
}

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{episodic.ErrConflict}, args...)...)
}

func notFound(id string) error {
	return fmt.Errorf("episode %q: %w", id, episodic.ErrNotFound)
}

// dbError gives err its sentinel: a duplicate id is ErrConflict, text
// PostgreSQL cannot hold (a NUL character, invalid UTF-8) ErrInvalid.
func dbError(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return conflict("%s: an episode id exists already", what)
		case "22021", "22P05":
			return fmt.Errorf("%w: %s: %s", episodic.ErrInvalid, what, pe.Message)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func ts(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: episodic.Normalize(t), Valid: true}
}

func tsPtr(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return ts(*t)
}

// prepared is a statement ready to insert, computed before the
// transaction. What the text index holds of it are its terms with their
// frequencies and its length in tokens, over its content and its
// entities as FTS5 indexes them (the JSON sqliteepisodic stores).
type prepared struct {
	st       *episodic.Statement
	entities string // JSON
	meta     pgtype.Text
	// keys are the statement's index keys, as an array literal: its
	// distinct terms, then its entity keys; freqs are the terms'
	// frequencies.
	keys, freqs string
	terms       []string
	length      int32
}

// termKey and entityKey are the index keys of a term and an entity key
// in a vault whose keys start with prefix.
func termKey(prefix, term string) string   { return prefix + "t" + term }
func entityKey(prefix, norm string) string { return prefix + "e" + norm }

// keyPrefix starts the index keys of a vault, so that the keys of one
// vault are mostly not another's (a shared one only costs a row read).
func keyPrefix(vault string) string {
	h := sha256.Sum256([]byte(vault))
	return hex.EncodeToString(h[:4])
}

func prepare(st *episodic.Statement, tz *textsearch.Tokenizer, prefix string) (prepared, error) {
	p := prepared{st: st}
	b, err := json.Marshal(st.Entities)
	if err != nil {
		return p, fmt.Errorf("%w: entities of %s: %v", episodic.ErrInvalid, st.ID, err)
	}
	p.entities = string(b)
	if len(st.Metadata) > 0 {
		b, err := json.Marshal(st.Metadata)
		if err != nil {
			return p, fmt.Errorf("%w: metadata of %s: %v", episodic.ErrInvalid, st.ID, err)
		}
		p.meta = pgtype.Text{String: string(b), Valid: true}
	}
	freq := map[string]int32{}
	count := func(t *textsearch.Token) bool {
		term := string(textsearch.Stem(t.Folded))
		if freq[term] == 0 {
			p.terms = append(p.terms, term)
		}
		freq[term]++
		p.length++
		return true
	}
	tz.Each(st.Content, count)
	tz.Each(p.entities, count)
	keys := make([]string, 0, len(p.terms)+len(st.Entities))
	freqs := make([]byte, 0, 4*len(p.terms))
	freqs = append(freqs, '{')
	for i, t := range p.terms {
		keys = append(keys, termKey(prefix, t))
		if i > 0 {
			freqs = append(freqs, ',')
		}
		freqs = strconv.AppendInt(freqs, int64(freq[t]), 10)
	}
	p.freqs = string(append(freqs, '}'))
	for _, e := range st.Entities {
		if k := entityKey(prefix, episodic.EntityKey(e)); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	p.keys = arrayLiteral(keys)
	return p, nil
}

// arrayLiteral writes a text[] literal of ss, every element quoted.
func arrayLiteral(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(s) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// rows buffers the rows of one write, column by column, to insert each
// table's in one statement (unnest of array parameters) of one batch.
type rows struct {
	vault string

	stN, stSup, stRev, stEmbOff []int64
	stID, stContent, stEntities []string
	stSource                    []string
	stConf, stSal               []float64
	stOcc, stRec                []pgtype.Timestamptz
	stMeta                      []pgtype.Text
	stEmbLen                    []pgtype.Int4
	stLen                       []int32
	stSupOK, stRevOK            []bool
	stKeys, stFreqs             []string
	emb                         []float32
	df                          map[string]int64
	vSeq, vSt                   []int64
	vFrom, vTo, vTxFrom, vTxTo  []pgtype.Timestamptz
	vState, vNote               []string
	atSt                        []int64
	atAt, atTx                  []pgtype.Timestamptz
	atSrc                       []string
	dA, dB                      []int64
	dNote                       []string
	dTx                         []pgtype.Timestamptz
	rSt                         []int64
	rTx                         []pgtype.Timestamptz
	docs, tokens                int64
	statements, others          int
}

func (r *rows) statement(p *prepared, n int64, sup, rev *int64, recorded pgtype.Timestamptz) {
	st := p.st
	r.stN = append(r.stN, n)
	r.stID = append(r.stID, st.ID)
	r.stContent = append(r.stContent, st.Content)
	r.stEntities = append(r.stEntities, p.entities)
	r.stSource = append(r.stSource, st.Source)
	r.stConf = append(r.stConf, st.Confidence)
	r.stSal = append(r.stSal, st.Salience)
	r.stOcc = append(r.stOcc, tsPtr(st.OccurredAt))
	r.stMeta = append(r.stMeta, p.meta)
	r.stSup, r.stSupOK = append(r.stSup, deref(sup)), append(r.stSupOK, sup != nil)
	r.stRev, r.stRevOK = append(r.stRev, deref(rev)), append(r.stRevOK, rev != nil)
	r.stRec = append(r.stRec, recorded)
	r.stEmbOff = append(r.stEmbOff, int64(len(r.emb)))
	if st.Embedding == nil {
		r.stEmbLen = append(r.stEmbLen, pgtype.Int4{})
	} else {
		r.stEmbLen = append(r.stEmbLen, pgtype.Int4{Int32: int32(len(st.Embedding)), Valid: true})
		r.emb = append(r.emb, st.Embedding...)
	}
	r.stLen = append(r.stLen, p.length)
	r.stKeys = append(r.stKeys, p.keys)
	r.stFreqs = append(r.stFreqs, p.freqs)
	if r.df == nil {
		r.df = map[string]int64{}
	}
	for _, t := range p.terms {
		r.df[t]++
	}
	r.docs++
	r.tokens += int64(p.length)
	r.statements++
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (r *rows) version(seq, n int64, v *episodic.Version) {
	r.vSeq = append(r.vSeq, seq)
	r.vSt = append(r.vSt, n)
	r.vFrom = append(r.vFrom, ts(v.ValidFrom))
	r.vTo = append(r.vTo, tsPtr(v.ValidTo))
	r.vTxFrom = append(r.vTxFrom, ts(v.RecordedAt))
	r.vTxTo = append(r.vTxTo, tsPtr(v.ClosedAt))
	r.vState = append(r.vState, string(v.State))
	r.vNote = append(r.vNote, v.Note)
	r.others++
}

func (r *rows) attestation(n int64, a *episodic.Attestation) {
	r.atSt = append(r.atSt, n)
	r.atAt = append(r.atAt, ts(a.At))
	r.atSrc = append(r.atSrc, a.Source)
	r.atTx = append(r.atTx, ts(a.RecordedAt))
	r.others++
}

func (r *rows) dispute(a, b int64, d *episodic.Dispute) {
	r.dA, r.dB = append(r.dA, a), append(r.dB, b)
	r.dNote = append(r.dNote, d.Note)
	r.dTx = append(r.dTx, ts(d.RecordedAt))
	r.others++
}

func (r *rows) recall(n int64, tx pgtype.Timestamptz) {
	r.rSt = append(r.rSt, n)
	r.rTx = append(r.rTx, tx)
	r.others++
}

// full reports whether the rows should be sent before more are added.
func (r *rows) full() bool { return r.statements >= 2000 || r.others >= 20000 }

// The inserts of rows. Statements' embeddings come as one flat array,
// each statement's slice of it given by an offset and a length (NULL for
// none).
const (
	insertStatements = `INSERT INTO ep_statements (vault_id, n, id, content, entities, source, confidence, salience, occurred_at, metadata, supersedes, revises, recorded_at, embedding, length, keys, freqs)
SELECT $1, x.n, x.id, x.content, x.entities, x.source, x.confidence, x.salience, x.occurred_at, x.metadata::jsonb,
	CASE WHEN x.sup_ok THEN x.sup END, CASE WHEN x.rev_ok THEN x.rev END, x.recorded_at,
	CASE WHEN x.emb_len IS NOT NULL THEN ($16::real[])[x.emb_off + 1 : x.emb_off + x.emb_len] END, x.length, x.keys::text[], x.freqs::int[]
FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::float8[], $9::timestamptz[], $10::text[],
	$11::bigint[], $12::bool[], $13::bigint[], $14::bool[], $15::timestamptz[], $17::bigint[], $18::int[], $19::int[], $20::text[], $21::text[])
	AS x(n, id, content, entities, source, confidence, salience, occurred_at, metadata, sup, sup_ok, rev, rev_ok, recorded_at, emb_off, emb_len, length, keys, freqs)`
	insertDF = `INSERT INTO ep_df AS d (vault_id, term, df) SELECT $1, * FROM unnest($2::text[], $3::bigint[])
	ON CONFLICT (vault_id, term) DO UPDATE SET df = d.df + excluded.df`
	insertVersions    = `INSERT INTO ep_versions (vault_id, seq, statement, valid_from, valid_to, tx_from, tx_to, state, note) SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::text[], $9::text[])`
	insertAttestation = `INSERT INTO ep_attestations (vault_id, statement, at, source, tx) SELECT $1, x.statement, x.at, x.source, x.tx FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS x(statement, at, source, tx, o) ORDER BY o`
	insertDisputes    = `INSERT INTO ep_disputes (vault_id, a, b, note, tx) SELECT $1, x.a, x.b, x.note, x.tx FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[]) WITH ORDINALITY AS x(a, b, note, tx, o) ORDER BY o`
	insertRecalls     = `INSERT INTO ep_recalls (vault_id, statement, tx) SELECT $1, x.statement, x.tx FROM unnest($2::bigint[], $3::timestamptz[]) WITH ORDINALITY AS x(statement, tx, o) ORDER BY o`
)

// queue adds the inserts of the buffered rows to b and empties r.
func (r *rows) queue(b *pgx.Batch) {
	v := r.vault
	if len(r.stN) > 0 {
		b.Queue(insertStatements, v, r.stN, r.stID, r.stContent, r.stEntities, r.stSource, r.stConf, r.stSal, r.stOcc, r.stMeta,
			r.stSup, r.stSupOK, r.stRev, r.stRevOK, r.stRec, r.emb, r.stEmbOff, r.stEmbLen, r.stLen, r.stKeys, r.stFreqs)
	}
	if len(r.df) > 0 {
		// In a fixed order: writers of a vault are serialised anyway, but
		// rows locked in order cannot deadlock.
		terms := slices.Sorted(maps.Keys(r.df))
		dfs := make([]int64, len(terms))
		for i, t := range terms {
			dfs[i] = r.df[t]
		}
		b.Queue(insertDF, v, terms, dfs)
	}
	if len(r.vSeq) > 0 {
		b.Queue(insertVersions, v, r.vSeq, r.vSt, r.vFrom, r.vTo, r.vTxFrom, r.vTxTo, r.vState, r.vNote)
	}
	if len(r.atSt) > 0 {
		b.Queue(insertAttestation, v, r.atSt, r.atAt, r.atSrc, r.atTx)
	}
	if len(r.dA) > 0 {
		b.Queue(insertDisputes, v, r.dA, r.dB, r.dNote, r.dTx)
	}
	if len(r.rSt) > 0 {
		b.Queue(insertRecalls, v, r.rSt, r.rTx)
	}
	docs, tokens := r.docs, r.tokens
	*r = rows{vault: v, docs: docs, tokens: tokens}
}

// send sends b in tx and returns its first error.
func send(ctx context.Context, tx pgx.Tx, b *pgx.Batch, what string) error {
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		if errors.Is(err, episodic.ErrConflict) || errors.Is(err, episodic.ErrNotFound) || errors.Is(err, episodic.ErrInvalid) {
			return err
		}
		return dbError(what, err)
	}
	return nil
}

// clock is the vault's row of ep_clock, locked by the transaction.
type clock struct {
	last   time.Time
	seq, n int64
}

// lockClock locks the vault's clock row, creating it, and moves its time
// as set says (an expression of the old time, last, and $2). It queues the
// statement in b, with a lookup of the rows of ids after it: both run in
// one round trip, the lookup once the lock is held.
func (s *Store) lockClock(b *pgx.Batch, set string, at time.Time, c *clock, ids []string, found map[string]int64) {
	b.Queue(`INSERT INTO ep_clock AS c (vault_id, last, seq, n, docs, tokens) VALUES ($1, $2, 0, 0, 0, 0)
		ON CONFLICT (vault_id) DO UPDATE SET last = `+set+` RETURNING c.last, c.seq, c.n`, s.vault, ts(at)).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&c.last, &c.seq, &c.n); err != nil {
			return fmt.Errorf("lock the clock: %w", err)
		}
		c.last = c.last.UTC()
		return nil
	})
	if len(ids) == 0 {
		return
	}
	b.Queue(`SELECT id, n FROM ep_statements WHERE vault_id = $1 AND id = ANY($2::text[])`, s.vault, ids).Query(func(rows pgx.Rows) error {
		var id string
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
			found[id] = n
			return nil
		})
		return err
	})
}

// Apply commits c in one transaction at a time after the vault's last.
func (s *Store) Apply(ctx context.Context, c *episodic.Change, now time.Time) (time.Time, error) {
	now = episodic.Normalize(now)
	var tz textsearch.Tokenizer
	preps := make([]prepared, len(c.Statements))
	for i := range c.Statements {
		var err error
		if preps[i], err = prepare(&c.Statements[i], &tz, s.prefix); err != nil {
			return time.Time{}, err
		}
	}
	ids := referenced(c)
	var at time.Time
	err := s.db.Write(ctx, func(tx pgx.Tx) error {
		var err error
		at, err = s.apply(ctx, tx, c, preps, ids, now)
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return at, nil
}

// referenced lists the ids c names.
func referenced(c *episodic.Change) []string {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, e := range c.Expect {
		add(e.Statement)
	}
	for _, e := range c.Close {
		add(e.Statement)
	}
	for _, st := range c.Statements {
		add(st.ID)
		add(st.Supersedes)
		add(st.Revises)
	}
	for _, v := range c.Versions {
		add(v.Statement)
	}
	for _, a := range c.Attestations {
		add(a.Statement)
	}
	for _, d := range c.Disputes {
		add(d.A)
		add(d.B)
	}
	for _, r := range c.Recalls {
		add(r.Statement)
	}
	return ids
}

// pair is a version by its sequence number and statement row.
type pair struct{ seq, n int64 }

func (s *Store) apply(ctx context.Context, tx pgx.Tx, c *episodic.Change, preps []prepared, ids []string, now time.Time) (time.Time, error) {
	var clk clock
	rowOf := map[string]int64{}
	b := &pgx.Batch{}
	s.lockClock(b, "greatest(c.last + interval '1 microsecond', excluded.last)", now, &clk, ids, rowOf)
	if err := send(ctx, tx, b, "apply"); err != nil {
		return time.Time{}, err
	}
	at := ts(clk.last)
	row := func(id string) (int64, error) {
		if n, ok := rowOf[id]; ok {
			return n, nil
		}
		return 0, notFound(id)
	}
	var expects, closes []pair
	for i, list := range [][]episodic.Expect{c.Expect, c.Close} {
		for _, e := range list {
			n, err := row(e.Statement)
			if err != nil {
				return time.Time{}, err
			}
			p := pair{e.Seq, n}
			if i == 0 {
				if !slices.Contains(expects, p) {
					expects = append(expects, p)
				}
				continue
			}
			if slices.Contains(closes, p) {
				return time.Time{}, conflict("episode %s: version %d closed twice", e.Statement, e.Seq)
			}
			closes = append(closes, p)
		}
	}
	r := &rows{vault: s.vault}
	for i := range preps {
		st := preps[i].st
		if _, dup := rowOf[st.ID]; dup {
			return time.Time{}, conflict("episode %s exists", st.ID)
		}
		var sup, rev *int64
		for _, ref := range []struct {
			id  string
			out **int64
		}{{st.Supersedes, &sup}, {st.Revises, &rev}} {
			if ref.id != "" {
				n, err := row(ref.id)
				if err != nil {
					return time.Time{}, err
				}
				*ref.out = &n
			}
		}
		clk.n++
		rowOf[st.ID] = clk.n
		r.statement(&preps[i], clk.n, sup, rev, at)
	}
	for i := range c.Versions {
		v := c.Versions[i]
		n, err := row(v.Statement)
		if err != nil {
			return time.Time{}, err
		}
		v.RecordedAt, v.ClosedAt = clk.last, nil
		clk.seq++
		r.version(clk.seq, n, &v)
	}
	for _, a := range c.Attestations {
		n, err := row(a.Statement)
		if err != nil {
			return time.Time{}, err
		}
		if a.RecordedAt.IsZero() {
			a.RecordedAt = clk.last
		}
		r.attestation(n, &a)
	}
	for _, d := range c.Disputes {
		a, err := row(d.A)
		if err != nil {
			return time.Time{}, err
		}
		bn, err := row(d.B)
		if err != nil {
			return time.Time{}, err
		}
		d.RecordedAt = clk.last
		r.dispute(a, bn, &d)
	}
	for _, rc := range c.Recalls {
		n, err := row(rc.Statement)
		if err != nil {
			return time.Time{}, err
		}
		r.recall(n, at)
	}

	// The checks, then the rows, in one round trip: a failed check fails
	// the transaction, which rolls everything back.
	b = &pgx.Batch{}
	if len(expects) > 0 {
		seqs, ns := pairs(expects)
		b.Queue(`SELECT seq FROM ep_versions WHERE vault_id = $1 AND tx_to IS NULL
			AND (seq, statement) IN (SELECT * FROM unnest($2::bigint[], $3::bigint[])) FOR SHARE`, s.vault, seqs, ns).Query(func(rows pgx.Rows) error {
			k := 0
			for rows.Next() {
				k++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if k != len(expects) {
				return conflict("an expected episode changed since it was read")
			}
			return nil
		})
	}
	if len(closes) > 0 {
		seqs, ns := pairs(closes)
		b.Queue(`UPDATE ep_versions SET tx_to = $2 WHERE vault_id = $1 AND tx_to IS NULL
			AND (seq, statement) IN (SELECT * FROM unnest($3::bigint[], $4::bigint[]))`, s.vault, at, seqs, ns).Exec(func(ct pgconn.CommandTag) error {
			if ct.RowsAffected() != int64(len(closes)) {
				return conflict("an episode to close changed since it was read")
			}
			return nil
		})
	}
	docs, tokens := r.docs, r.tokens
	r.queue(b)
	b.Queue(`UPDATE ep_clock SET seq = $2, n = $3, docs = docs + $4, tokens = tokens + $5 WHERE vault_id = $1`, s.vault, clk.seq, clk.n, docs, tokens)
	if err := send(ctx, tx, b, "apply"); err != nil {
		return time.Time{}, err
	}
	return clk.last, nil
}

func pairs(ps []pair) (seqs, ns []int64) {
	for _, p := range ps {
		seqs = append(seqs, p.seq)
		ns = append(ns, p.n)
	}
	return seqs, ns
}

// Import inserts records as given, in one transaction.
func (s *Store) Import(ctx context.Context, recs []*episodic.Record) error {
	if len(recs) == 0 {
		return nil
	}
	var tz textsearch.Tokenizer
	preps := make([]prepared, len(recs))
	latest := time.Time{}
	later := func(t time.Time) {
		if t.After(latest) {
			latest = t
		}
	}
	seen := map[string]bool{}
	var ids []string
	ref := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for i, rec := range recs {
		if len(rec.Versions) == 0 {
			return fmt.Errorf("%w: episode %s has no version", episodic.ErrInvalid, rec.Statement.ID)
		}
		var err error
		if preps[i], err = prepare(&rec.Statement, &tz, s.prefix); err != nil {
			return err
		}
		ref(rec.Statement.ID)
		ref(rec.Statement.Supersedes)
		ref(rec.Statement.Revises)
		for _, v := range rec.Versions {
			later(v.RecordedAt)
			if v.ClosedAt != nil {
				later(*v.ClosedAt)
			}
		}
		for _, a := range rec.Attestations {
			later(a.RecordedAt)
		}
		for _, d := range rec.Disputes {
			ref(d.A)
			ref(d.B)
			later(d.RecordedAt)
		}
		for _, r := range rec.Recalls {
			later(r.RecordedAt)
		}
	}
	// Versions go in in their original order (which breaks ties between
	// equal valid times).
	type version struct {
		v   *episodic.Version
		rec int
	}
	var versions []version
	for i, rec := range recs {
		for j := range rec.Versions {
			versions = append(versions, version{&rec.Versions[j], i})
		}
	}
	slices.SortStableFunc(versions, func(a, b version) int { return cmpInt(a.v.Seq, b.v.Seq) })
	return s.db.Write(ctx, func(tx pgx.Tx) error {
		var clk clock
		rowOf := map[string]int64{}
		b := &pgx.Batch{}
		s.lockClock(b, "greatest(c.last, excluded.last)", latest, &clk, ids, rowOf)
		if err := send(ctx, tx, b, "import"); err != nil {
			return err
		}
		for _, rec := range recs {
			if _, ok := rowOf[rec.Statement.ID]; ok {
				return conflict("episode %s exists", rec.Statement.ID)
			}
		}
		r := &rows{vault: s.vault}
		flush := func(force bool) error {
			if !force && !r.full() {
				return nil
			}
			b := &pgx.Batch{}
			r.queue(b)
			return send(ctx, tx, b, "import")
		}
		ns := make([]int64, len(recs))
		for i, rec := range recs {
			clk.n++
			ns[i] = clk.n
			rowOf[rec.Statement.ID] = clk.n
		}
		row := func(id string) (int64, error) {
			if n, ok := rowOf[id]; ok {
				return n, nil
			}
			return 0, notFound(id)
		}
		for i, rec := range recs {
			var sup, rev *int64
			for _, ref := range []struct {
				id  string
				out **int64
			}{{rec.Statement.Supersedes, &sup}, {rec.Statement.Revises, &rev}} {
				if ref.id != "" {
					n, err := row(ref.id)
					if err != nil {
						return err
					}
					*ref.out = &n
				}
			}
			r.statement(&preps[i], ns[i], sup, rev, ts(rec.Versions[0].RecordedAt))
			if err := flush(false); err != nil {
				return err
			}
		}
		for _, v := range versions {
			clk.seq++
			r.version(clk.seq, ns[v.rec], v.v)
			if err := flush(false); err != nil {
				return err
			}
		}
		for i, rec := range recs {
			for j := range rec.Attestations {
				r.attestation(ns[i], &rec.Attestations[j])
			}
			for j := range rec.Disputes {
				d := &rec.Disputes[j]
				if d.A != rec.Statement.ID {
					continue // recorded once, with its first statement
				}
				bn, err := row(d.B)
				if err != nil {
					return err
				}
				r.dispute(ns[i], bn, d)
			}
			for _, rc := range rec.Recalls {
				r.recall(ns[i], ts(rc.RecordedAt))
			}
			if err := flush(false); err != nil {
				return err
			}
		}
		docs, tokens := r.docs, r.tokens
		if err := flush(true); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE ep_clock SET seq = $2, n = $3, docs = docs + $4, tokens = tokens + $5 WHERE vault_id = $1`,
			s.vault, clk.seq, clk.n, docs, tokens)
		return err
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// infinity is the known time of the current belief.
var infinity = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
