package indextest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/vault/index"
)

// BenchCorpus is the index of the lexical benchmarks: chunks of 60 words
// of generated text, ten to a document.
type BenchCorpus struct {
	// Docs are the documents, each with its ten chunks.
	Docs []BenchDoc
	// Words is the text the chunks are cut from, word by word.
	Words []string
}

// BenchDoc is a document of a BenchCorpus with its chunks.
type BenchDoc struct {
	Doc    index.Doc
	Chunks []index.Chunk
}

// NewBenchCorpus returns 10,000 chunks (100,000 with CTXKIT_BENCH_FULL
// set, the scale).
func NewBenchCorpus(tb testing.TB) BenchCorpus {
	n := 10000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 100000
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*400); err != nil {
		tb.Fatal(err)
	}
	c := BenchCorpus{Words: strings.Fields(text.String())}
	for d := 0; d < n/10; d++ {
		doc := BenchDoc{Doc: index.Doc{Path: fmt.Sprintf("doc%05d.md", d), Hash: "h"}}
		for i := range 10 {
			at := ((d*10 + i) * 60) % (len(c.Words) - 60)
			doc.Chunks = append(doc.Chunks, index.Chunk{Text: strings.Join(c.Words[at:at+60], " "), Heading: fmt.Sprintf("Doc %d > Part %d", d, i)})
		}
		c.Docs = append(c.Docs, doc)
	}
	return c
}

// Put puts the corpus in x.
func (c BenchCorpus) Put(tb testing.TB, x index.Index) {
	for _, d := range c.Docs {
		if err := x.Put(tb.Context(), d.Doc, d.Chunks); err != nil {
			tb.Fatal(err)
		}
	}
}

// Rows are the chunks as a Lexicon indexes them, numbered from 1 in
// order, as an index given them by Put numbers them.
func (c BenchCorpus) Rows() []index.TextRow {
	var rows []index.TextRow
	for _, d := range c.Docs {
		for _, ch := range d.Chunks {
			rows = append(rows, index.TextRow{ID: int64(len(rows) + 1), Text: ch.Text, Heading: ch.Heading})
		}
	}
	return rows
}

// Query is the benchmarks' i-th query: a word of the text, then
// "latency timeout".
func (c BenchCorpus) Query(i int) string {
	return c.Words[(i*7919)%len(c.Words)] + " latency timeout"
}
