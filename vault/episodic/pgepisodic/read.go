package pgepisodic

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ctxkit/ctxkit/internal/textsearch"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// querier is a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// snapshot runs fn in a read-only transaction that sees one snapshot of
// the database (REPEATABLE READ), for reads of several statements. (JIT
// compilation, which cost more than these reads, is off for every
// connection: pgdb.Open.)
func (s *Store) snapshot(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.db.Read(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return err
		}
		return fn(tx)
	})
}

// stream is snapshot for reads that call back their caller: once fn has
// handed anything over, its failure is final (a retry would hand it over
// again).
func (s *Store) stream(ctx context.Context, fn func(tx pgx.Tx, handed *bool) error) error {
	var final error
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		handed := false
		err := fn(tx, &handed)
		if err != nil && handed {
			final = err
			return nil
		}
		return err
	})
	if final != nil {
		return final
	}
	return err
}

// params numbers the parameters of a query; $1 is the vault.
type params []any

func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// from joins the versions v of the vault to their statements s.
const from = ` FROM ep_versions v JOIN ep_statements s ON s.vault_id = v.vault_id AND s.n = v.statement WHERE v.vault_id = $1 AND `

// viewColumns are the columns of an episode view: s is the statement, v
// the version held.
const viewColumns = `s.n, s.id, s.content, s.entities, s.source, s.confidence, s.salience, s.occurred_at, s.metadata,
	(SELECT x.id FROM ep_statements x WHERE x.vault_id = s.vault_id AND x.n = s.supersedes),
	(SELECT x.id FROM ep_statements x WHERE x.vault_id = s.vault_id AND x.n = s.revises), s.recorded_at,
	v.seq, v.valid_from, v.valid_to, v.tx_from, v.tx_to, v.state, v.note`

// row is a scanned view with the statement's row number.
type row struct {
	n int64
	e episodic.Episode
}

func timePtr(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func scanView(sc pgx.Row, extra ...any) (row, error) {
	var r row
	var ents, state string
	var meta []byte
	var occurred, validTo, txTo pgtype.Timestamptz
	var supersedes, revises pgtype.Text
	var recorded, validFrom, txFrom time.Time
	e := &r.e
	dest := append([]any{&r.n, &e.ID, &e.Content, &ents, &e.Source, &e.Confidence, &e.Salience, &occurred, &meta,
		&supersedes, &revises, &recorded, &e.Seq, &validFrom, &validTo, &txFrom, &txTo, &state, &e.Note}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(ents), &e.Entities); err != nil {
		return r, fmt.Errorf("entities of %s: %w", e.ID, err)
	}
	if meta != nil {
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return r, fmt.Errorf("metadata of %s: %w", e.ID, err)
		}
	}
	e.OccurredAt = timePtr(occurred)
	e.Supersedes, e.Revises = supersedes.String, revises.String
	e.FirstRecordedAt = recorded.UTC()
	e.Version.Statement = e.ID
	e.ValidFrom, e.ValidTo = validFrom.UTC(), timePtr(validTo)
	e.RecordedAt, e.ClosedAt = txFrom.UTC(), timePtr(txTo)
	e.State = episodic.State(state)
	if e.State != episodic.Open {
		e.InvalidatedAt = &e.RecordedAt
	}
	return r, nil
}

// conditions builds the WHERE terms of f for the version v of statement s.
func (s *Store) conditions(f *episodic.Filter, p *params) (string, error) {
	var terms []string
	if f.KnownAt == nil {
		terms = append(terms, "v.tx_to IS NULL")
	} else {
		k := p.add(ts(*f.KnownAt)) + "::timestamptz"
		terms = append(terms, "v.tx_from <= "+k+" AND (v.tx_to IS NULL OR v.tx_to > "+k+")")
	}
	if f.ValidAt != nil {
		t := p.add(ts(*f.ValidAt)) + "::timestamptz"
		terms = append(terms, "v.valid_from <= "+t+" AND (v.valid_to IS NULL OR v.valid_to > "+t+")")
	}
	if len(f.Entities) > 0 {
		keys := make([]string, len(f.Entities))
		for i, e := range f.Entities {
			keys[i] = entityKey(s.prefix, episodic.EntityKey(e))
		}
		// The statements naming them drive the query (the planner
		// misjudges how few they are and reads by time instead), found
		// by the text index alone: the test of the vault is written so
		// that no index of vault_id joins in.
		terms = append(terms, "v.statement = ANY(ARRAY(SELECT e.n FROM ep_statements e WHERE e.keys && "+p.add(keys)+"::text[] AND (e.vault_id = $1) IS TRUE))")
	}
	if f.Source != "" {
		terms = append(terms, "s.source = "+p.add(f.Source)+"::text")
	}
	if f.MinConfidence > 0 {
		terms = append(terms, "s.confidence >= "+p.add(f.MinConfidence)+"::float8")
	}
	for _, k := range slices.Sorted(mapKeys(f.Meta)) {
		val, err := metaValue(f.Meta[k])
		if err != nil {
			return "", fmt.Errorf("%w: metadata filter %q: %v", episodic.ErrInvalid, k, err)
		}
		x := "(s.metadata -> " + p.add(k) + "::text)"
		terms = append(terms, "(CASE jsonb_typeof("+x+") WHEN 'boolean' THEN to_jsonb("+x+"::boolean::int) WHEN 'null' THEN NULL ELSE "+x+" END) IS NOT DISTINCT FROM "+p.add(val)+"::jsonb")
	}
	if f.Disputed {
		terms = append(terms, disputed(f, p))
	}
	return strings.Join(terms, " AND "), nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// metaValue is a metadata filter's value as SQLite's json_extract compares
// it: true and false are the integers 1 and 0, null is no value (SQL
// NULL, as is a missing key).
func metaValue(v any) (pgtype.Text, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return pgtype.Text{}, err
	}
	switch string(b) {
	case "null":
		return pgtype.Text{}, nil
	case "true":
		b = []byte("1")
	case "false":
		b = []byte("0")
	}
	return pgtype.Text{String: string(b), Valid: true}, nil
}

// disputed is the condition that s's version v is open and in a dispute
// recorded by the known time with a statement whose version then is open.
func disputed(f *episodic.Filter, p *params) string {
	other := "ov.tx_to IS NULL"
	dtx := "true"
	if f.KnownAt != nil {
		k := p.add(ts(*f.KnownAt)) + "::timestamptz"
		other = "ov.tx_from <= " + k + " AND (ov.tx_to IS NULL OR ov.tx_to > " + k + ")"
		dtx = "d.tx <= " + k
	}
	sub := func(self, peer string) string {
		return fmt.Sprintf("EXISTS (SELECT 1 FROM ep_disputes d JOIN ep_versions ov ON ov.vault_id = d.vault_id AND ov.statement = d.%s WHERE d.vault_id = $1 AND d.%s = s.n AND %s AND %s AND ov.state = 'open')", peer, self, dtx, other)
	}
	return "v.state = 'open' AND (" + sub("a", "b") + " OR " + sub("b", "a") + ")"
}

// scanPage is how many episodes Scan reads in its first query.
const scanPage = 64

// clockMark is the version of the vault's clock row: every write of the
// vault updates the row (Apply, Import) or deletes it (Drop), so two
// snapshots that see the same version see the same rows of the vault.
const clockMark = `(SELECT c.xmin::text FROM ep_clock c WHERE c.vault_id = $1)`

// Scan iterates the episodes f selects. The first scanPage+1 come in one
// statement; when there are more, a cursor in a snapshot reads on, from
// the same state of the vault (its clock row unchanged) or else from the
// start, so that a scan stopped early reads no further and every scan
// sees one state of the vault.
func (s *Store) Scan(ctx context.Context, f episodic.Filter, order episodic.Order, fn func(*episodic.Episode) bool) error {
	p := params{s.vault}
	where, err := s.conditions(&f, &p)
	if err != nil {
		return err
	}
	columns := viewColumns
	if f.WithEmbeddings {
		columns += ", s.embedding"
	}
	orderBy := "v.valid_from DESC, v.seq DESC"
	if len(f.Entities) > 0 {
		// The statements naming the entities are few: sorting them beats
		// walking the index of valid times (which the planner picks for a
		// limit when it misjudges how few they are); the expression is
		// valid_from, in a form no index provides.
		orderBy = "v.valid_from + interval '0' DESC, v.seq DESC"
	}
	if order == episodic.BySalience {
		orderBy = "s.salience DESC, " + orderBy
	}
	q := "SELECT " + columns + ", " + clockMark + from + where + " ORDER BY " + orderBy
	scan := func(rows pgx.Rows, mark *pgtype.Text) (row, error) {
		var emb []float32
		extra := []any{mark}
		if f.WithEmbeddings {
			extra = append(extra, &emb)
		}
		r, err := scanView(rows, extra...)
		r.e.Embedding = emb
		return r, err
	}
	var first []row
	var mark pgtype.Text
	err = func() error {
		rows, err := s.db.Pool.Query(ctx, q+" LIMIT "+strconv.Itoa(scanPage+1), p...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scan(rows, &mark)
			if err != nil {
				return err
			}
			first = append(first, r)
		}
		return rows.Err()
	}()
	if err != nil {
		return fmt.Errorf("scan episodes: %w", err)
	}
	if len(first) <= scanPage {
		// All of them, from one statement.
		for i := range first {
			if !fn(&first[i].e) {
				break
			}
		}
		return nil
	}
	first = first[:scanPage]
	err = s.stream(ctx, func(tx pgx.Tx, handed *bool) error {
		// The first page is the snapshot's if the vault's clock row is
		// the same; the cursor then reads on after it, else from the start.
		var now pgtype.Text
		b := &pgx.Batch{}
		b.Queue(clockMark[1:len(clockMark)-1], s.vault).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&now); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
		b.Queue("DECLARE ep_scan NO SCROLL CURSOR FOR "+q+" OFFSET "+strconv.Itoa(scanPage), p...)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if now != mark {
			if _, err := tx.Exec(ctx, "CLOSE ep_scan"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "DECLARE ep_scan NO SCROLL CURSOR FOR "+q, p...); err != nil {
				return err
			}
		} else {
			for i := range first {
				*handed = true
				if !fn(&first[i].e) {
					return nil
				}
			}
		}
		var ignored pgtype.Text
		for size := 256; ; size = min(4*size, 4096) {
			rows, err := tx.Query(ctx, "FETCH "+strconv.Itoa(size)+" FROM ep_scan")
			if err != nil {
				return err
			}
			got, stop := 0, false
			for rows.Next() {
				got++
				r, err := scan(rows, &ignored)
				if err != nil {
					rows.Close()
					return err
				}
				*handed = true
				if !fn(&r.e) {
					stop = true
					break
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if stop || got < size {
				return nil
			}
		}
	})
	if err != nil {
		return fmt.Errorf("scan episodes: %w", err)
	}
	return nil
}

// batcher is a transaction or the pool.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// errMoved is a search's finding that the vault changed between its
// statements.
var errMoved = errors.New("the vault changed during the search")

// Search ranks the episodes f selects that match any word of text by
// FTS5's BM25 over their content and entities, computed from the vault's
// term rows exactly as sqliteepisodic's FTS5 table scores them.
//
// It reads in two round trips without a transaction, each statement
// reading the version of the vault's clock row: if they all saw the same,
// they saw the same rows of the vault. If not, it reads again in one
// snapshot.
func (s *Store) Search(ctx context.Context, f episodic.Filter, text string, limit int) ([]episodic.Scored, error) {
	// Each word of the text is one phrase of the FTS5 query: one term,
	// counted as often as it is repeated.
	phrases := textsearch.Tokenize(text)
	if len(phrases) == 0 || limit <= 0 {
		return nil, nil
	}
	terms := slices.Clone(phrases)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	keys := make([]string, len(terms))
	for i, t := range terms {
		keys[i] = termKey(s.prefix, t)
	}
	p := params{s.vault}
	tp := p.add(keys)
	where, err := s.conditions(&f, &p)
	if err != nil {
		return nil, err
	}
	// The statements holding a term, found by the text index alone, drive
	// the query (a plan that does not depend on the tables' statistics);
	// their terms are the first keys, as many as they have frequencies.
	candidates := `WITH s AS MATERIALIZED (SELECT s.n, s.source, s.confidence, s.metadata, s.length, s.keys[1:cardinality(s.freqs)] AS terms, s.freqs
		FROM ep_statements s WHERE s.keys && ` + tp + `::text[] AND (s.vault_id = $1) IS TRUE)
		SELECT v.seq, s.length, s.terms, s.freqs FROM s JOIN ep_versions v ON v.statement = s.n WHERE v.vault_id = $1 AND ` + where
	sr := searcher{s: s, phrases: phrases, terms: terms, candidates: candidates, args: p, limit: limit}
	out, err := sr.run(ctx, s.db.Pool, true)
	if errors.Is(err, errMoved) {
		err = s.snapshot(ctx, func(tx pgx.Tx) error {
			out, err = sr.run(ctx, tx, false)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("search episodes: %w", err)
	}
	return out, nil
}

// searcher is one search.
type searcher struct {
	s          *Store
	phrases    []string
	terms      []string
	candidates string
	args       params
	limit      int
}

// run searches through q: in a snapshot, or, with check, in statements
// that each read the clock row's version, and fails with errMoved when
// they did not all see the same.
func (sr *searcher) run(ctx context.Context, q batcher, check bool) ([]episodic.Scored, error) {
	s := sr.s
	var docs, tokens int64
	var marks [3]pgtype.Text
	df := map[string]int64{}
	type measured struct {
		seq, length int64
		terms       []string
		freqs       []int32
	}
	var ms []measured
	b := &pgx.Batch{}
	b.Queue(`SELECT docs, tokens, xmin::text FROM ep_clock WHERE vault_id = $1`, s.vault).QueryRow(func(row pgx.Row) error {
		if err := row.Scan(&docs, &tokens, &marks[0]); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	b.Queue(`SELECT term, df FROM ep_df WHERE vault_id = $1 AND term = ANY($2::text[])`, s.vault, sr.terms).Query(func(rows pgx.Rows) error {
		var term string
		var n int64
		_, err := pgx.ForEachRow(rows, []any{&term, &n}, func() error {
			df[term] = n
			return nil
		})
		return err
	})
	b.Queue(sr.candidates, sr.args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var m measured
			if err := rows.Scan(&m.seq, &m.length, &m.terms, &m.freqs); err != nil {
				return err
			}
			ms = append(ms, m)
		}
		return rows.Err()
	})
	if check {
		b.Queue("SELECT "+clockMark, s.vault).QueryRow(func(row pgx.Row) error { return row.Scan(&marks[1]) })
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	if check && marks[1] != marks[0] {
		return nil, errMoved
	}
	if docs == 0 || len(ms) == 0 {
		return nil, nil
	}
	// FTS5's bm25(): for each phrase in order, IDF · Weight, with the
	// row's length over the average over every row of the table.
	avgdl := float64(tokens) / float64(docs)
	idf := map[string]float64{}
	for _, t := range sr.terms {
		idf[t] = textsearch.IDF(docs, df[t])
	}
	type cand struct {
		seq   int64
		score float64
	}
	cands := make([]cand, 0, len(ms))
	freq := map[string]int32{}
	tp := s.prefix + "t"
	for _, m := range ms {
		clear(freq)
		for i, k := range m.terms {
			freq[strings.TrimPrefix(k, tp)] = m.freqs[i]
		}
		norm := textsearch.Norm(float64(m.length), avgdl)
		score := 0.0
		for _, ph := range sr.phrases {
			if n := freq[ph]; n > 0 {
				score += textsearch.Weight(idf[ph], float64(n), norm)
			}
		}
		cands = append(cands, cand{m.seq, score})
	}
	// Best first, then the later version, as ORDER BY rank, seq DESC.
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
	cands = cands[:min(sr.limit, len(cands))]
	seqs := make([]int64, len(cands))
	for i, c := range cands {
		seqs[i] = c.seq
	}
	bySeq := map[int64]episodic.Episode{}
	b = &pgx.Batch{}
	b.Queue("SELECT "+viewColumns+from+"v.seq = ANY($2::bigint[])", s.vault, seqs).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			r, err := scanView(rows)
			if err != nil {
				return err
			}
			bySeq[r.e.Seq] = r.e
		}
		return rows.Err()
	})
	if check {
		b.Queue("SELECT "+clockMark, s.vault).QueryRow(func(row pgx.Row) error { return row.Scan(&marks[2]) })
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	if check && marks[2] != marks[0] {
		return nil, errMoved
	}
	out := make([]episodic.Scored, 0, len(cands))
	for _, c := range cands {
		out = append(out, episodic.Scored{Episode: bySeq[c.seq], BM25: c.score})
	}
	return out, nil
}

// Episodes returns the episodes f selects among ids.
func (s *Store) Episodes(ctx context.Context, f episodic.Filter, ids []string) ([]episodic.Episode, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	p := params{s.vault}
	in := p.add(ids)
	where, err := s.conditions(&f, &p)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, "SELECT "+viewColumns+from+"s.id = ANY("+in+"::text[]) AND "+where, p...)
	if err != nil {
		return nil, fmt.Errorf("read episodes: %w", err)
	}
	defer rows.Close()
	var out []episodic.Episode
	for rows.Next() {
		r, err := scanView(rows)
		if err != nil {
			return nil, fmt.Errorf("read episodes: %w", err)
		}
		out = append(out, r.e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read episodes: %w", err)
	}
	return out, nil
}

// Get returns one episode as held at known.
func (s *Store) Get(ctx context.Context, id string, known *time.Time) (episodic.Episode, bool, error) {
	f := episodic.Filter{KnownAt: known}
	p := params{s.vault}
	in := p.add(id)
	where, err := s.conditions(&f, &p)
	if err != nil {
		return episodic.Episode{}, false, err
	}
	var e episodic.Episode
	var ok bool
	err = s.snapshot(ctx, func(tx pgx.Tx) error {
		r, err := scanView(tx.QueryRow(ctx, "SELECT "+viewColumns+from+"s.id = "+in+"::text AND "+where, p...))
		if errors.Is(err, pgx.ErrNoRows) {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ep_statements WHERE vault_id = $1 AND id = $2)`, s.vault, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return notFound(id)
			}
			ok = false
			return nil
		}
		if err != nil {
			return err
		}
		eps := []episodic.Episode{r.e}
		if err := s.annotate(ctx, tx, eps, known); err != nil {
			return err
		}
		e, ok = eps[0], true
		return nil
	})
	if err != nil {
		if errors.Is(err, episodic.ErrNotFound) {
			return episodic.Episode{}, false, err
		}
		return episodic.Episode{}, false, fmt.Errorf("get episode %s: %w", id, err)
	}
	return e, ok, nil
}

// Annotate fills what is derived from the rest of the store, for all the
// episodes in one query.
func (s *Store) Annotate(ctx context.Context, eps []episodic.Episode, known *time.Time) error {
	if len(eps) == 0 {
		return nil
	}
	if err := s.annotate(ctx, s.db.Pool, eps, known); err != nil {
		return fmt.Errorf("annotate episodes: %w", err)
	}
	return nil
}

func (s *Store) annotate(ctx context.Context, q querier, eps []episodic.Episode, known *time.Time) error {
	k := infinity
	if known != nil {
		k = ts(*known)
	}
	at := map[string][]int{}
	var ids []string
	for i := range eps {
		if _, ok := at[eps[i].ID]; !ok {
			ids = append(ids, eps[i].ID)
		}
		at[eps[i].ID] = append(at[eps[i].ID], i)
	}
	// The disputes of a statement open at k: recorded by then, with the
	// other statement open at k.
	rows, err := q.Query(ctx, `SELECT s.id,
		(SELECT x.id FROM ep_statements x WHERE x.vault_id = $1 AND x.supersedes = s.n AND x.recorded_at <= $2 ORDER BY x.n LIMIT 1),
		(SELECT count(*) FROM ep_attestations a WHERE a.vault_id = $1 AND a.statement = s.n AND a.tx <= $2),
		(SELECT max(a.at) FROM ep_attestations a WHERE a.vault_id = $1 AND a.statement = s.n AND a.tx <= $2),
		(SELECT count(*) FROM ep_recalls r WHERE r.vault_id = $1 AND r.statement = s.n AND r.tx <= $2),
		(SELECT max(r.tx) FROM ep_recalls r WHERE r.vault_id = $1 AND r.statement = s.n AND r.tx <= $2),
		(SELECT array_agg(DISTINCT o.id ORDER BY o.id) FROM ep_disputes d
			JOIN ep_statements o ON o.vault_id = $1 AND o.n = CASE WHEN d.a = s.n THEN d.b ELSE d.a END
			JOIN ep_versions ov ON ov.vault_id = $1 AND ov.statement = o.n
			WHERE d.vault_id = $1 AND (d.a = s.n OR d.b = s.n) AND d.tx <= $2
				AND ov.tx_from <= $2 AND (ov.tx_to IS NULL OR ov.tx_to > $2) AND ov.state = 'open')
		FROM ep_statements s WHERE s.vault_id = $1 AND s.id = ANY($3::text[])`, s.vault, k, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var succ pgtype.Text
		var lastConfirmed, lastRecalled pgtype.Timestamptz
		var confirmed, recalled int
		var disputes []string
		if err := rows.Scan(&id, &succ, &confirmed, &lastConfirmed, &recalled, &lastRecalled, &disputes); err != nil {
			return err
		}
		for _, i := range at[id] {
			e := &eps[i]
			e.SupersededBy = succ.String
			e.ConfirmedCount, e.LastConfirmedAt = confirmed, timePtr(lastConfirmed)
			e.RecallCount, e.LastRecalledAt = recalled, timePtr(lastRecalled)
			e.DisputedWith = nil
			if e.State == episodic.Open && len(disputes) > 0 {
				e.DisputedWith = slices.Clone(disputes)
			}
		}
	}
	return rows.Err()
}

// Record returns everything about one statement.
func (s *Store) Record(ctx context.Context, id string) (*episodic.Record, error) {
	var rec *episodic.Record
	err := s.snapshot(ctx, func(tx pgx.Tx) error {
		var n int64
		err := tx.QueryRow(ctx, `SELECT n FROM ep_statements WHERE vault_id = $1 AND id = $2`, s.vault, id).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return err
		}
		recs, err := s.records(ctx, tx, []int64{n})
		if err != nil {
			return err
		}
		rec = recs[0]
		return nil
	})
	if err != nil {
		if errors.Is(err, episodic.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("record of episode %s: %w", id, err)
	}
	return rec, nil
}

// records reads the records of the statements ns, in that order.
func (s *Store) records(ctx context.Context, q querier, ns []int64) ([]*episodic.Record, error) {
	recs := make([]*episodic.Record, len(ns))
	byN := make(map[int64]*episodic.Record, len(ns))
	for i, n := range ns {
		recs[i] = &episodic.Record{}
		byN[n] = recs[i]
	}
	rows, err := q.Query(ctx, "SELECT "+viewColumns+", s.embedding"+from+"s.n = ANY($2::bigint[]) ORDER BY s.n, v.seq", s.vault, ns)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var emb []float32
		r, err := scanView(rows, &emb)
		if err != nil {
			rows.Close()
			return nil, err
		}
		rec := byN[r.n]
		if len(rec.Versions) == 0 {
			rec.Statement = r.e.Statement
			rec.Statement.Embedding = emb
		}
		rec.Versions = append(rec.Versions, r.e.Version)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	each := func(sql string, dest []any, fn func()) error {
		rows, err := q.Query(ctx, sql, s.vault, ns)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, dest, func() error {
			fn()
			return nil
		})
		return err
	}
	var n, a, b int64
	var at, tx time.Time
	var source, ida, idb string
	if err := each(`SELECT statement, at, source, tx FROM ep_attestations WHERE vault_id = $1 AND statement = ANY($2::bigint[]) ORDER BY statement, tx, k`,
		[]any{&n, &at, &source, &tx}, func() {
			rec := byN[n]
			rec.Attestations = append(rec.Attestations, episodic.Attestation{Statement: rec.Statement.ID, At: at.UTC(), Source: source, RecordedAt: tx.UTC()})
		}); err != nil {
		return nil, err
	}
	if err := each(`SELECT d.a, d.b, sa.id, sb.id, d.note, d.tx FROM ep_disputes d
		JOIN ep_statements sa ON sa.vault_id = d.vault_id AND sa.n = d.a JOIN ep_statements sb ON sb.vault_id = d.vault_id AND sb.n = d.b
		WHERE d.vault_id = $1 AND (d.a = ANY($2::bigint[]) OR d.b = ANY($2::bigint[])) ORDER BY d.tx, d.k`,
		[]any{&a, &b, &ida, &idb, &source, &tx}, func() {
			d := episodic.Dispute{A: ida, B: idb, Note: source, RecordedAt: tx.UTC()}
			if rec := byN[a]; rec != nil {
				rec.Disputes = append(rec.Disputes, d)
			}
			if rec := byN[b]; rec != nil && b != a {
				rec.Disputes = append(rec.Disputes, d)
			}
		}); err != nil {
		return nil, err
	}
	if err := each(`SELECT statement, tx FROM ep_recalls WHERE vault_id = $1 AND statement = ANY($2::bigint[]) ORDER BY statement, tx, k`,
		[]any{&n, &tx}, func() {
			rec := byN[n]
			rec.Recalls = append(rec.Recalls, episodic.Recall{Statement: rec.Statement.ID, RecordedAt: tx.UTC()})
		}); err != nil {
		return nil, err
	}
	return recs, nil
}

// Successors returns the statements that supersede or revise id.
func (s *Store) Successors(ctx context.Context, id string) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT x.id FROM ep_statements s
		LEFT JOIN ep_statements x ON x.vault_id = s.vault_id AND (x.supersedes = s.n OR x.revises = s.n)
		WHERE s.vault_id = $1 AND s.id = $2 ORDER BY x.n`, s.vault, id)
	if err != nil {
		return nil, fmt.Errorf("successors of %s: %w", id, err)
	}
	var out []string
	found := false
	var succ pgtype.Text
	if _, err := pgx.ForEachRow(rows, []any{&succ}, func() error {
		found = true
		if succ.Valid {
			out = append(out, succ.String)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("successors of %s: %w", id, err)
	}
	if !found {
		return nil, notFound(id)
	}
	return out, nil
}

// EachVector streams the embeddings.
func (s *Store) EachVector(ctx context.Context, fn func(id string, v []float32) error) error {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, embedding FROM ep_statements WHERE vault_id = $1 AND embedding IS NOT NULL ORDER BY n`, s.vault)
	if err != nil {
		return fmt.Errorf("read the embeddings: %w", err)
	}
	var id string
	var v []float32
	_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error { return fn(id, slices.Clone(v)) })
	return err
}

// Entities counts the episodes f selects per entity.
func (s *Store) Entities(ctx context.Context, f episodic.Filter) ([]episodic.EntityCount, error) {
	p := params{s.vault}
	where, err := s.conditions(&f, &p)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Pool.Query(ctx, "SELECT s.entities"+from+where+" AND s.entities <> '[]'", p...)
	if err != nil {
		return nil, fmt.Errorf("count entities: %w", err)
	}
	var counter episodic.EntityCounter
	var raw string
	if _, err := pgx.ForEachRow(rows, []any{&raw}, func() error { return counter.AddJSON(raw) }); err != nil {
		return nil, fmt.Errorf("count entities: %w", err)
	}
	return counter.Counts(), nil
}

// Stats counts the statements held at known, in one query.
func (s *Store) Stats(ctx context.Context, known *time.Time) (episodic.Stats, error) {
	f := episodic.Filter{KnownAt: known}
	p := params{s.vault}
	where, err := s.conditions(&f, &p)
	if err != nil {
		return episodic.Stats{}, err
	}
	disp := disputed(&f, &p)
	var st episodic.Stats
	err = s.db.Pool.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE v.state = 'open'), count(*) FILTER (WHERE "+disp+")"+from+where, p...).
		Scan(&st.Total, &st.Open, &st.Disputed)
	if err != nil {
		return st, fmt.Errorf("count episodes: %w", err)
	}
	st.Closed = st.Total - st.Open
	return st, nil
}

// exportPage is how many statements Export reads at a time.
const exportPage = 1000

// Export calls fn with every record, oldest statement first, from one
// snapshot.
func (s *Store) Export(ctx context.Context, fn func(*episodic.Record) error) error {
	err := s.stream(ctx, func(tx pgx.Tx, handed *bool) error {
		rows, err := tx.Query(ctx, `SELECT n FROM ep_statements WHERE vault_id = $1 ORDER BY n`, s.vault)
		if err != nil {
			return err
		}
		ns, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for len(ns) > 0 {
			page := ns[:min(len(ns), exportPage)]
			ns = ns[len(page):]
			recs, err := s.records(ctx, tx, page)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				*handed = true
				if err := fn(rec); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export episodes: %w", err)
	}
	return nil
}
