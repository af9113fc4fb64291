package ctxvault

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/ctxkit/ctxkit/internal/english"
	"github.com/ctxkit/ctxkit/vault/episodic"
)

// SchemaVersion is the newest episodes.db schema this package reads: 1 is
// CtxVault's episodic v1, 2 the 0.8.2 additions as this package defines
// them (see the package comment).
const SchemaVersion = 2

// maxRecalls bounds the recalls made of one episode's recall_count.
const maxRecalls = 100_000

// Row is one row of CtxVault's episodes table with its entities, times as
// CtxVault wrote them (ISO-8601 text).
type Row struct {
	ID, Content, Source  string
	Confidence, Salience float64
	OccurredAt           string
	ValidFrom, ValidTo   string
	RecordedAt           string
	InvalidatedAt        string
	SupersededBy         string
	RevisedBy            string
	RecallCount          int64
	LastRecalledAt       string
	Metadata             string
	Entities             []string
	Embedded             bool
}

// AttestationRow is one confirmation of an episode (schema 2).
type AttestationRow struct {
	Episode, At, Source, RecordedAt string
}

// DisputeRow says two episodes cannot both hold (schema 2).
type DisputeRow struct {
	A, B, Note, RecordedAt string
}

// DB is the content of an episodes.db.
type DB struct {
	Version      int
	Rows         []Row
	Attestations []AttestationRow
	Disputes     []DisputeRow
}

// ReadDB reads the episodes.db at path, read-only. A file that does not
// exist is an empty vault (CtxVault creates it on the first write).
func ReadDB(ctx context.Context, path string) (*DB, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return &DB{}, nil
	} else if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tables := map[string]bool{}
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return nil, fmt.Errorf("%s is not a SQLite database CtxVault wrote: %w", path, err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		tables[n] = true
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if !tables["meta"] || !tables["episodes"] || !tables["episode_entities"] {
		return nil, fmt.Errorf("%s is not a CtxVault episodic database (no meta, episodes and episode_entities tables)", path)
	}
	out := &DB{}
	var v string
	if err := db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'schema_version'").Scan(&v); err != nil {
		return nil, fmt.Errorf("%s: schema_version: %w", path, err)
	}
	if out.Version, err = strconv.Atoi(v); err != nil || out.Version < 1 {
		return nil, fmt.Errorf("%s: schema_version %q is not a version", path, v)
	}
	if out.Version > SchemaVersion {
		return nil, fmt.Errorf("%s has schema version %d, newer than the %d this ctxkit reads", path, out.Version, SchemaVersion)
	}
	if err := readRows(ctx, db, out, tables); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// readRows reads the episodes, their entities, attestations and disputes.
func readRows(ctx context.Context, db *sql.DB, out *DB, tables map[string]bool) error {
	revised := "NULL"
	if hasColumn(ctx, db, "episodes", "revised_by") {
		revised = "revised_by"
	}
	q := `SELECT id, content, COALESCE(source, ''), confidence, salience, COALESCE(occurred_at, ''), valid_from,
		COALESCE(valid_to, ''), recorded_at, COALESCE(invalidated_at, ''), COALESCE(superseded_by, ''), COALESCE(` + revised + `, ''),
		recall_count, COALESCE(last_recalled_at, ''), COALESCE(metadata, '{}'), embedding IS NOT NULL
		FROM episodes ORDER BY recorded_at, id`
	byID := map[string]int{}
	err := scan(ctx, db, q, func(r *sql.Rows) error {
		var e Row
		if err := r.Scan(&e.ID, &e.Content, &e.Source, &e.Confidence, &e.Salience, &e.OccurredAt, &e.ValidFrom, &e.ValidTo,
			&e.RecordedAt, &e.InvalidatedAt, &e.SupersededBy, &e.RevisedBy, &e.RecallCount, &e.LastRecalledAt, &e.Metadata, &e.Embedded); err != nil {
			return err
		}
		byID[e.ID] = len(out.Rows)
		out.Rows = append(out.Rows, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the episodes: %w", err)
	}
	err = scan(ctx, db, "SELECT episode_id, entity FROM episode_entities ORDER BY episode_id, entity", func(r *sql.Rows) error {
		var id, ent string
		if err := r.Scan(&id, &ent); err != nil {
			return err
		}
		i, ok := byID[id]
		if !ok {
			return fmt.Errorf("entity %q of episode %s, which the vault does not hold", ent, id)
		}
		out.Rows[i].Entities = append(out.Rows[i].Entities, ent)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the entities: %w", err)
	}
	if tables["attestations"] {
		err = scan(ctx, db, "SELECT episode_id, at, COALESCE(source, ''), recorded_at FROM attestations ORDER BY recorded_at", func(r *sql.Rows) error {
			var a AttestationRow
			if err := r.Scan(&a.Episode, &a.At, &a.Source, &a.RecordedAt); err != nil {
				return err
			}
			out.Attestations = append(out.Attestations, a)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the attestations: %w", err)
		}
	}
	if tables["disputes"] {
		err = scan(ctx, db, "SELECT episode_a, episode_b, COALESCE(note, ''), recorded_at FROM disputes ORDER BY recorded_at", func(r *sql.Rows) error {
			var d DisputeRow
			if err := r.Scan(&d.A, &d.B, &d.Note, &d.RecordedAt); err != nil {
				return err
			}
			out.Disputes = append(out.Disputes, d)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the disputes: %w", err)
		}
	}
	return nil
}

// hasColumn reports whether table has column.
func hasColumn(ctx context.Context, db *sql.DB, table, column string) bool {
	found := false
	_ = scan(ctx, db, "SELECT name FROM pragma_table_info('"+table+"')", func(r *sql.Rows) error {
		var n string
		if err := r.Scan(&n); err != nil {
			return err
		}
		found = found || n == column
		return nil
	})
	return found
}

// scan runs q and calls fn on each row.
func scan(ctx context.Context, db *sql.DB, q string, fn func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Records turns CtxVault's rows into ctxkit's statements with their
// history, in an order that Store.Import takes (each after the statement
// it follows), and says what it could not carry over exactly in notes.
//
// A row CtxVault still holds open is one open version from recorded_at.
// A closed row (invalidated_at set) was believed open until then, since
// CtxVault wrote its valid_to at the closing: it becomes an open version
// from recorded_at until invalidated_at, then one closed at valid_to
// (superseded when superseded_by names its successor, invalidated with
// metadata.invalidation_reason as its note otherwise). A revised row
// (revised_by, or invalidation_reason "revised") is only closed in
// transaction time. The successor names its predecessor (Supersedes,
// Revises). recall_count becomes as many recalls, at last_recalled_at
// (CtxVault keeps no other times). Attestations and disputes keep their
// times. An embedding is not carried over: the vault embeds again.
func Records(db *DB) (recs []*episodic.Record, notes []string, err error) {
	byID := make(map[string]*episodic.Record, len(db.Rows))
	var embedded int
	for i := range db.Rows {
		r := &db.Rows[i]
		rec, err := record(r)
		if err != nil {
			return nil, nil, fmt.Errorf("episode %s: %w", r.ID, err)
		}
		if _, dup := byID[r.ID]; dup {
			return nil, nil, fmt.Errorf("episode %s appears twice", r.ID)
		}
		byID[r.ID] = rec
		recs = append(recs, rec)
		if r.RecallCount > maxRecalls {
			notes = append(notes, fmt.Sprintf("episode %s: recall_count %d kept as %d recalls", r.ID, r.RecallCount, maxRecalls))
		}
		if r.Embedded {
			embedded++
		}
	}
	if embedded > 0 {
		notes = append(notes, fmt.Sprintf("%s CtxVault's embeddings, which are not reused: the vault's embedder embeds them again, or none does",
			english.Count(embedded, "episode carried", "episodes carried")))
	}
	for i := range db.Rows {
		r := &db.Rows[i]
		for _, link := range []struct{ to, kind string }{{r.SupersededBy, "superseded"}, {r.RevisedBy, "revised"}} {
			if link.to == "" {
				continue
			}
			next := byID[link.to]
			if next == nil {
				return nil, nil, fmt.Errorf("episode %s is %s by %s, which the vault does not hold", r.ID, link.kind, link.to)
			}
			prev := &next.Statement.Supersedes
			if link.kind == "revised" {
				prev = &next.Statement.Revises
			}
			if *prev != "" && *prev != r.ID {
				return nil, nil, fmt.Errorf("episode %s follows both %s and %s", link.to, *prev, r.ID)
			}
			*prev = r.ID
		}
	}
	for _, a := range db.Attestations {
		rec := byID[a.Episode]
		if rec == nil {
			return nil, nil, fmt.Errorf("an attestation of episode %s, which the vault does not hold", a.Episode)
		}
		at, err1 := episodic.ParseTime(a.At)
		rt, err2 := episodic.ParseTime(a.RecordedAt)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("an attestation of episode %s: %w", a.Episode, err)
		}
		rec.Attestations = append(rec.Attestations, episodic.Attestation{Statement: a.Episode, At: at, Source: a.Source, RecordedAt: rt})
	}
	for _, d := range db.Disputes {
		rec := byID[d.A]
		if rec == nil || byID[d.B] == nil || d.A == d.B {
			return nil, nil, fmt.Errorf("a dispute of episodes %s and %s, which the vault does not both hold", d.A, d.B)
		}
		rt, err := episodic.ParseTime(d.RecordedAt)
		if err != nil {
			return nil, nil, fmt.Errorf("a dispute of episodes %s and %s: %w", d.A, d.B, err)
		}
		rec.Disputes = append(rec.Disputes, episodic.Dispute{A: d.A, B: d.B, Note: d.Note, RecordedAt: rt})
	}
	recs, err = ordered(recs, byID)
	if err != nil {
		return nil, nil, err
	}
	sequence(recs)
	return recs, notes, nil
}

// record is the statement of one row, with its versions and recalls.
func record(r *Row) (*episodic.Record, error) {
	times := map[string]*time.Time{}
	for name, s := range map[string]string{"occurred_at": r.OccurredAt, "valid_from": r.ValidFrom, "valid_to": r.ValidTo,
		"recorded_at": r.RecordedAt, "invalidated_at": r.InvalidatedAt, "last_recalled_at": r.LastRecalledAt} {
		if s == "" {
			continue
		}
		t, err := episodic.ParseTime(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		times[name] = &t
	}
	from, recorded := times["valid_from"], times["recorded_at"]
	if from == nil || recorded == nil {
		return nil, errors.New("no valid_from or recorded_at")
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(r.Metadata), &meta); err != nil {
		return nil, fmt.Errorf("metadata is not a JSON object: %w", err)
	}
	st := episodic.Statement{ID: r.ID, Content: r.Content, Entities: episodic.NormalizeEntities(r.Entities), Source: r.Source,
		Confidence: r.Confidence, Salience: r.Salience, OccurredAt: times["occurred_at"], Metadata: meta}
	if st.Entities == nil {
		st.Entities = []string{}
	}
	rec := &episodic.Record{Statement: st}
	to, closed := times["valid_to"], times["invalidated_at"]
	if closed == nil {
		rec.Versions = []episodic.Version{{Statement: r.ID, ValidFrom: *from, ValidTo: to, RecordedAt: *recorded, State: episodic.Open}}
	} else {
		reason, _ := meta["invalidation_reason"].(string)
		delete(meta, "invalidation_reason")
		if r.RevisedBy != "" || reason == "revised" {
			// A revision closes the original in transaction time only.
			rec.Versions = []episodic.Version{{Statement: r.ID, ValidFrom: *from, ValidTo: to, RecordedAt: *recorded, ClosedAt: closed, State: episodic.Open}}
		} else {
			if to == nil {
				to = closed // closed without an end: it ended when the vault learned so
			}
			state := episodic.Invalidated
			if r.SupersededBy != "" {
				state, reason = episodic.Superseded, ""
			}
			rec.Versions = []episodic.Version{
				{Statement: r.ID, ValidFrom: *from, RecordedAt: *recorded, ClosedAt: closed, State: episodic.Open},
				{Statement: r.ID, ValidFrom: *from, ValidTo: to, RecordedAt: *closed, State: state, Note: reason},
			}
		}
		if len(meta) == 0 {
			rec.Statement.Metadata = nil
		}
	}
	if r.RecallCount > 0 {
		at := rec.Versions[len(rec.Versions)-1].RecordedAt
		if t := times["last_recalled_at"]; t != nil {
			at = *t
		}
		for range min(r.RecallCount, maxRecalls) {
			rec.Recalls = append(rec.Recalls, episodic.Recall{Statement: r.ID, RecordedAt: at})
		}
	}
	return rec, rec.Check()
}

// ordered puts every record after the one it follows, otherwise in the
// order given (first recorded first).
func ordered(recs []*episodic.Record, byID map[string]*episodic.Record) ([]*episodic.Record, error) {
	out := make([]*episodic.Record, 0, len(recs))
	state := make(map[string]int, len(recs)) // 1 visiting, 2 done
	visit := func(r *episodic.Record) error {
		// A chain is walked back iteratively: chains may be long.
		var chain []*episodic.Record
		for cur := r; cur != nil && state[cur.Statement.ID] == 0; {
			state[cur.Statement.ID] = 1
			chain = append(chain, cur)
			prev := cmp.Or(cur.Statement.Supersedes, cur.Statement.Revises)
			if prev == "" {
				break
			}
			if state[prev] == 1 {
				return fmt.Errorf("episodes %s and %s follow each other in a cycle", cur.Statement.ID, prev)
			}
			cur = byID[prev]
		}
		for i := len(chain) - 1; i >= 0; i-- {
			state[chain[i].Statement.ID] = 2
			out = append(out, chain[i])
		}
		return nil
	}
	for _, r := range recs {
		if err := visit(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sequence numbers the versions of recs in the order the vault recorded
// them (Store.Import inserts them in that order).
func sequence(recs []*episodic.Record) {
	var all []*episodic.Version
	for _, r := range recs {
		for i := range r.Versions {
			all = append(all, &r.Versions[i])
		}
	}
	slices.SortStableFunc(all, func(a, b *episodic.Version) int { return a.RecordedAt.Compare(b.RecordedAt) })
	for i, v := range all {
		v.Seq = int64(i + 1)
	}
}
