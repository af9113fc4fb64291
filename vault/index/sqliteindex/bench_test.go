package sqliteindex_test

import (
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/vault/index/indextest"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// BenchmarkLexical queries an index of 10,000 chunks of about 60 words
// (100,000 with CTXKIT_BENCH_FULL=1, the scale), ten chunks to a
// document.
func BenchmarkLexical(b *testing.B) {
	x, err := sqliteindex.Open(b.Context(), filepath.Join(b.TempDir(), "index.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	c := indextest.NewBenchCorpus(b)
	c.Put(b, x)
	for i := 0; b.Loop(); i++ {
		if _, err := x.Lexical(b.Context(), c.Query(i), 10); err != nil {
			b.Fatal(err)
		}
	}
}
