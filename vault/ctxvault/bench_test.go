package ctxvault

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/vault"
	"github.com/ctxkit/ctxkit/vault/vaulttest"
)

// benchDB writes an episodes.db of n episodes as CtxVault would hold them
// after a year of use: chains of three (each superseded by the next), one
// episode in ten invalidated late, recalls, entities, attestations and
// disputes.
func benchDB(b *testing.B, path string, n int) {
	db := newCVDB(b, path, 2)
	tx, err := db.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec("PRAGMA defer_foreign_keys = ON"); err != nil { // a row names its successor, inserted next
		b.Fatal(err)
	}
	t0 := day("2026-01-01T00:00:00Z")
	ins, _ := tx.Prepare(`INSERT INTO episodes (id, content, source, confidence, salience, valid_from, valid_to, recorded_at, invalidated_at,
		superseded_by, recall_count, last_recalled_at, metadata) VALUES (?, ?, 'bench', 1.0, 0.5, ?, ?, ?, ?, ?, ?, ?, ?)`)
	ent, _ := tx.Prepare("INSERT INTO episode_entities VALUES (?, ?, ?)")
	att, _ := tx.Prepare("INSERT INTO attestations VALUES (?, ?, 'bench', ?)")
	dis, _ := tx.Prepare("INSERT INTO disputes VALUES (?, ?, 'bench', ?)")
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid4hex()
	}
	var last string
	for i := 0; i < n; i++ {
		rec := t0.Add(time.Duration(i) * time.Minute)
		from, to, closed, next, meta := iso(rec), any(nil), any(nil), any(nil), "{}"
		switch {
		case i%3 != 2 && i+1 < n: // superseded by the next of its chain
			b := rec.Add(time.Minute)
			to, closed, next = iso(b), iso(b), ids[i+1]
		case i%10 == 9: // invalidated late, ending in the past
			to, closed, meta = iso(rec.Add(time.Hour)), iso(rec.Add(30*24*time.Hour)), `{"invalidation_reason": "late"}`
		}
		if _, err := ins.Exec(ids[i], fmt.Sprintf("statement %d about account %d and its plan", i, i/3), from, to, iso(rec), closed, next,
			i%5, iso(rec.Add(time.Hour)), meta); err != nil {
			b.Fatal(err)
		}
		e := fmt.Sprintf("account-%d", i/3)
		if _, err := ent.Exec(ids[i], e, e); err != nil {
			b.Fatal(err)
		}
		if i%3 == 2 {
			if _, err := att.Exec(ids[i], iso(rec.Add(time.Hour)), iso(rec.Add(2*time.Hour))); err != nil {
				b.Fatal(err)
			}
			if last != "" {
				if _, err := dis.Exec(last, ids[i], iso(rec.Add(3*time.Hour))); err != nil {
					b.Fatal(err)
				}
			}
			last = ids[i]
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkImportEpisodes imports an episodic vault of 10,000 episodes
// with their history: reading episodes.db and mapping the rows to versions
// (read), and all of it into a fresh SQLite backend (import).
func BenchmarkImportEpisodes(b *testing.B) {
	const n = 10_000
	root := b.TempDir()
	writeConfig(b, filepath.Join(root, DirName), map[string]any{"memory": entryOf("episodic", "memory", false)})
	benchDB(b, filepath.Join(root, DirName, "vaults", "memory", "episodes.db"), n)
	src, err := Load(filepath.Join(root, DirName, "config.json"), vault.Local)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			db, err := ReadDB(ctx, src.Vaults[0].DB)
			if err != nil {
				b.Fatal(err)
			}
			if recs, _, err := Records(db); err != nil || len(recs) != n {
				b.Fatal(len(recs), err)
			}
		}
		b.ReportMetric(float64(n), "episodes/op")
	})
	b.Run("import", func(b *testing.B) { benchImport(b, src, n) })
}

// benchImport imports src, of n episodes, into a fresh backend each time.
func benchImport(b *testing.B, src *Source, n int) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		e := vaulttest.New(b, vaulttest.Options{})
		src.Root = e.Root // only the origin's name depends on it
		b.StartTimer()
		rep, err := Import(ctx, e.Svc, vault.Owner(), []*Source{src}, Options{})
		if err != nil || rep.NotImported() != 0 || rep.Vaults[0].Episodes != n {
			b.Fatalf("%+v %v", rep.Vaults, err)
		}
	}
	b.ReportMetric(float64(n), "episodes/op")
}
