package textsearch

import (
	"database/sql"
	"testing"

	_ "modernc.org/sqlite"
)

// ftsProbe is an in-memory FTS5 table with the tokenizer "porter
// unicode61", to compare the Go tokenizer with.
type ftsProbe struct {
	db *sql.DB
}

func newFTSProbe(t testing.TB) *ftsProbe {
	t.Helper()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE VIRTUAL TABLE p USING fts5(t, tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(p, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return &ftsProbe{db: db}
}

// tokens returns FTS5's tokens of each text, in order.
func (p *ftsProbe) tokens(t testing.TB, texts []string) [][]string {
	t.Helper()
	tx, err := p.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM p`); err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO p(rowid, t) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	for i, s := range texts {
		if _, err := ins.Exec(i+1, s); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(`SELECT doc, term FROM v ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := make([][]string, len(texts))
	for rows.Next() {
		var doc int
		var term string
		if err := rows.Scan(&doc, &term); err != nil {
			t.Fatal(err)
		}
		out[doc-1] = append(out[doc-1], term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
