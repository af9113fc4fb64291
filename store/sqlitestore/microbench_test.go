package sqlitestore

// Benchmarks of the Go side of indexing, on 20,000 items of the large list.

import (
	"testing"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/internal/textsearch"
)

func BenchmarkPrepareItems(b *testing.B) {
	items := largeList()[:20000]
	for b.Loop() {
		if _, err := prepareItems(items, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScalars(b *testing.B) {
	items := largeList()[:20000]
	var (
		buf []byte
		sc  jsonscan.Scalars
	)
	for b.Loop() {
		for _, it := range items {
			buf, _ = sc.Append(buf[:0], it)
		}
	}
}

func BenchmarkIndexTerms(b *testing.B) {
	items := largeList()[:20000]
	texts := make([]string, len(items))
	for i, it := range items {
		s, _ := jsonscan.AppendScalars(nil, it)
		texts[i] = string(s)
	}
	var tb termBuilder
	var buf []byte
	for b.Loop() {
		for _, t := range texts {
			buf = tb.indexTerms(buf[:0], t)
		}
	}
}

func BenchmarkTokenize(b *testing.B) {
	items := largeList()[:20000]
	texts := make([]string, len(items))
	for i, it := range items {
		s, _ := jsonscan.AppendScalars(nil, it)
		texts[i] = string(s)
	}
	var tz textsearch.Tokenizer
	for b.Loop() {
		for _, t := range texts {
			tz.Each(t, func(*textsearch.Token) bool { return true })
		}
	}
}
