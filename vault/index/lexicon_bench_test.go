package index_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/vault/index"
)

// benchRows are the chunks of sqliteindex's BenchmarkLexical: 10,000 of
// about 60 words (100,000 with CTXKIT_BENCH_FULL=1), ten to a document.
func benchRows(b *testing.B) ([]index.TextRow, []string) {
	n := 10000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 100000
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*400); err != nil {
		b.Fatal(err)
	}
	words := strings.Fields(text.String())
	rows := make([]index.TextRow, n)
	for i := range rows {
		at := (i * 60) % (len(words) - 60)
		rows[i] = index.TextRow{ID: int64(i + 1), Text: strings.Join(words[at:at+60], " "), Heading: fmt.Sprintf("Doc %d > Part %d", i/10, i%10)}
	}
	return rows, words
}

// BenchmarkLexiconSearch ranks the same queries as sqliteindex's
// BenchmarkLexical: a common word and two more, top 10.
func BenchmarkLexiconSearch(b *testing.B) {
	rows, words := benchRows(b)
	lx, err := index.NewLexicon(b.Context(), rows)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		lx.Search(words[(i*7919)%len(words)]+" latency timeout", 10)
	}
}

// BenchmarkNewLexicon indexes the chunks (the tokenizing part of
// LoadLexicon).
func BenchmarkNewLexicon(b *testing.B) {
	rows, _ := benchRows(b)
	for b.Loop() {
		if _, err := index.NewLexicon(b.Context(), rows); err != nil {
			b.Fatal(err)
		}
	}
}
