package ctxvault

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The tests build CtxVault's on-disk layout themselves: config.json as its
// config module writes it, skill files as its write_skill does, and an
// episodes.db in the schema of its storage/sqlite_store.py (version 1),
// plus the 0.8.2 tables as this package defines them, with rows written
// the way CtxVault writes them: uuid4 hex ids, times from Python's
// datetime.isoformat() in UTC ("2026-08-01T10:00:00.123456+00:00"), and
// valid_to and invalidated_at overwritten in place.

// cvSchema1 is CtxVault's episodic schema, version 1.
const cvSchema1 = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE episodes (
	id TEXT PRIMARY KEY,
	content TEXT NOT NULL,
	source TEXT,
	confidence REAL NOT NULL DEFAULT 1.0,
	salience REAL NOT NULL DEFAULT 0.5,
	occurred_at TEXT,
	valid_from TEXT NOT NULL,
	valid_to TEXT,
	recorded_at TEXT NOT NULL,
	invalidated_at TEXT,
	superseded_by TEXT REFERENCES episodes(id),
	recall_count INTEGER NOT NULL DEFAULT 0,
	last_recalled_at TEXT,
	metadata TEXT NOT NULL DEFAULT '{}',
	embedding BLOB
);
CREATE INDEX idx_episodes_valid ON episodes(valid_from, valid_to);
CREATE INDEX idx_episodes_recorded ON episodes(recorded_at, invalidated_at);
CREATE INDEX idx_episodes_supersedes ON episodes(superseded_by);
CREATE INDEX idx_episodes_source ON episodes(source);
CREATE TABLE episode_entities (
	episode_id TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
	entity TEXT NOT NULL,
	entity_norm TEXT NOT NULL,
	PRIMARY KEY (episode_id, entity_norm)
);
CREATE INDEX idx_entities_norm ON episode_entities(entity_norm);
INSERT INTO meta VALUES ('schema_version', '1');
`

// cvSchema2 adds the 0.8.2 tables.
const cvSchema2 = `
ALTER TABLE episodes ADD COLUMN revised_by TEXT REFERENCES episodes(id);
CREATE TABLE attestations (episode_id TEXT NOT NULL REFERENCES episodes(id), at TEXT NOT NULL, source TEXT, recorded_at TEXT NOT NULL);
CREATE TABLE disputes (episode_a TEXT NOT NULL REFERENCES episodes(id), episode_b TEXT NOT NULL REFERENCES episodes(id), note TEXT, recorded_at TEXT NOT NULL);
UPDATE meta SET value = '2' WHERE key = 'schema_version';
`

// cvDB writes an episodes.db as CtxVault does.
type cvDB struct {
	t  testing.TB
	db *sql.DB
}

func newCVDB(t testing.TB, path string, version int) *cvDB {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	c := &cvDB{t: t, db: db}
	c.exec(cvSchema1)
	if version >= 2 {
		c.exec(cvSchema2)
	}
	return c
}

func (c *cvDB) exec(q string, args ...any) {
	c.t.Helper()
	if _, err := c.db.Exec(q, args...); err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
}

// uuid4hex is a uuid4 as Python's uuid.uuid4().hex writes it.
func uuid4hex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// iso is t as datetime.isoformat() writes an aware UTC time: microseconds
// only when there are some.
func iso(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 != 0 {
		return t.Format("2006-01-02T15:04:05.000000+00:00")
	}
	return t.Format("2006-01-02T15:04:05+00:00")
}

func day(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// ep is an episode to write.
type ep struct {
	content, source    string
	entities           []string
	validFrom, validTo string // as given by the caller (already ISO)
	salience           float64
	metadata           map[string]any
}

// write is write_episode at now.
func (c *cvDB) write(e ep, now time.Time) string {
	c.t.Helper()
	id := uuid4hex()
	c.insert(id, e, now)
	return id
}

func (c *cvDB) insert(id string, e ep, now time.Time) {
	c.t.Helper()
	rec := iso(now)
	from := e.validFrom
	if from == "" {
		from = rec
	}
	var to any
	if e.validTo != "" {
		to = e.validTo
	}
	if e.salience == 0 {
		e.salience = 0.5
	}
	meta, _ := json.Marshal(orEmpty(e.metadata))
	var src any
	if e.source != "" {
		src = e.source
	}
	c.exec(`INSERT INTO episodes (id, content, source, confidence, salience, occurred_at, valid_from, valid_to, recorded_at, metadata, embedding)
		VALUES (?, ?, ?, 1.0, ?, NULL, ?, ?, ?, ?, NULL)`, id, e.content, src, e.salience, from, to, rec, string(meta))
	for _, ent := range e.entities {
		c.exec("INSERT OR IGNORE INTO episode_entities VALUES (?, ?, lower(?))", id, ent, ent)
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// invalidate is invalidate_episode at now: valid_to and invalidated_at
// overwritten, the reason put in the metadata.
func (c *cvDB) invalidate(id, validTo, reason string, now time.Time) {
	c.t.Helper()
	var meta string
	if err := c.db.QueryRow("SELECT metadata FROM episodes WHERE id = ?", id).Scan(&meta); err != nil {
		c.t.Fatal(err)
	}
	m := map[string]any{}
	_ = json.Unmarshal([]byte(meta), &m)
	if reason != "" {
		m["invalidation_reason"] = reason
	}
	b, _ := json.Marshal(m)
	if validTo == "" {
		validTo = iso(now)
	}
	c.exec("UPDATE episodes SET valid_to = ?, invalidated_at = ?, metadata = ? WHERE id = ?", validTo, iso(now), string(b), id)
}

// supersede is supersede_episode at now: a new row from the boundary, the
// old one closed there and linked.
func (c *cvDB) supersede(id string, e ep, now time.Time) string {
	c.t.Helper()
	if e.entities == nil {
		rows, err := c.db.Query("SELECT entity FROM episode_entities WHERE episode_id = ?", id)
		if err != nil {
			c.t.Fatal(err)
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			e.entities = append(e.entities, s)
		}
		rows.Close()
	}
	if e.validFrom == "" {
		e.validFrom = iso(now)
	}
	nid := uuid4hex()
	c.insert(nid, e, now)
	c.exec("UPDATE episodes SET valid_to = ?, invalidated_at = ?, superseded_by = ? WHERE id = ?", e.validFrom, iso(now), nid, id)
	return nid
}

// writeConfig writes a config.json of vaults in dir (a .ctxvault folder).
func writeConfig(t testing.TB, dir string, vaults map[string]any) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"vaults": vaults})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entryOf is a config entry as CtxVault writes a local one.
func entryOf(typ, name string, restricted bool, agents ...string) map[string]any {
	p := ".ctxvault/vaults/" + name
	e := map[string]any{"type": typ, "vault_path": p, "db_path": nil, "restricted": restricted, "allowed_agents": orList(agents)}
	switch typ {
	case "semantic":
		e["db_path"] = p + "/chroma"
	case "episodic":
		e["db_path"] = p + "/episodes.db"
	}
	return e
}

func orList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func openRW(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err == nil {
		db.SetMaxOpenConns(1)
	}
	return db, err
}
