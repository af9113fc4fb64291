package index_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/indextest"
)

// BenchmarkLexiconSearch ranks the chunks and queries of sqliteindex's
// BenchmarkLexical (indextest.NewBenchCorpus): a common word and two more,
// top 10.
func BenchmarkLexiconSearch(b *testing.B) {
	c := indextest.NewBenchCorpus(b)
	rows := c.Rows()
	lx, err := index.NewLexicon(b.Context(), rows)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		lx.Search(c.Query(i), 10)
	}
}

// BenchmarkNewLexicon indexes the chunks (the tokenizing part of
// LoadLexicon).
func BenchmarkNewLexicon(b *testing.B) {
	rows := indextest.NewBenchCorpus(b).Rows()
	for b.Loop() {
		if _, err := index.NewLexicon(b.Context(), rows); err != nil {
			b.Fatal(err)
		}
	}
}
