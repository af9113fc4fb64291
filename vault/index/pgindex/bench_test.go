package pgindex_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/pgindex"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// BenchmarkLexical queries an index of 10,000 chunks of about 60 words
// (100,000 with CTXKIT_BENCH_FULL=1), ten chunks to a document, as the
// sqliteindex's BenchmarkLexical does, on PostgreSQL and on SQLite in the
// same run.
func BenchmarkLexical(b *testing.B) {
	n := 10000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 100000
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*400); err != nil {
		b.Fatal(err)
	}
	words := strings.Fields(text.String())
	fill := func(b *testing.B, x index.Index) {
		for d := 0; d < n/10; d++ {
			var cs []index.Chunk
			for c := range 10 {
				at := ((d*10 + c) * 60) % (len(words) - 60)
				cs = append(cs, index.Chunk{Text: strings.Join(words[at:at+60], " "), Heading: fmt.Sprintf("Doc %d > Part %d", d, c)})
			}
			if err := x.Put(b.Context(), index.Doc{Path: fmt.Sprintf("doc%05d.md", d), Hash: "h"}, cs); err != nil {
				b.Fatal(err)
			}
		}
	}
	query := func(b *testing.B, x index.Index) {
		for i := 0; b.Loop(); i++ {
			if _, err := x.Lexical(b.Context(), words[(i*7919)%len(words)]+" latency timeout", 10); err != nil {
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
		fill(b, x)
		query(b, x)
	})
	b.Run("postgres", func(b *testing.B) {
		db := pgtest.DB(b, pgindex.Migrate)
		x := pgindex.New(db, pgtest.VaultID())
		fill(b, x)
		// As autovacuum would: statistics for the planner, and the
		// visibility map for index-only scans.
		if _, err := db.Pool.Exec(b.Context(), "VACUUM ANALYZE ix_terms, ix_chunks, ix_docs"); err != nil {
			b.Fatal(err)
		}
		query(b, x)
	})
}
