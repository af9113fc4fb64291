package pgindex_test

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/indextest"
	"github.com/ctxkit/ctxkit/vault/index/pgindex"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// BenchmarkLexical queries an index of 10,000 chunks of about 60 words
// (100,000 with CTXKIT_BENCH_FULL=1), ten chunks to a document, as the
// sqliteindex's BenchmarkLexical does, on PostgreSQL and on SQLite in the
// same run.
func BenchmarkLexical(b *testing.B) {
	c := indextest.NewBenchCorpus(b)
	query := func(b *testing.B, x index.Index) {
		for i := 0; b.Loop(); i++ {
			if _, err := x.Lexical(b.Context(), c.Query(i), 10); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		x, err := sqliteindex.Open(b.Context(), filepath.Join(b.TempDir(), "index.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		c.Put(b, x)
		query(b, x)
	})
	b.Run("postgres", func(b *testing.B) {
		db := pgtest.DB(b, pgindex.Migrate)
		x := pgindex.New(db, pgtest.VaultID())
		c.Put(b, x)
		// As autovacuum would: statistics for the planner, and the
		// visibility map for index-only scans.
		if _, err := db.Pool.Exec(b.Context(), "VACUUM ANALYZE ix_terms, ix_chunks, ix_docs"); err != nil {
			b.Fatal(err)
		}
		query(b, x)
	})
}
