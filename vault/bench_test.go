package vault

import (
	"fmt"
	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/index"
)

// BenchmarkIndexMarkdown indexes a vault of generated markdown files of
// about 300 words each: 1,000 of them, or the 10,000 with
// CTXKIT_BENCH_FULL=1; lexical only, and with the deterministic embedder
// (ctxkit's own overhead, no model). It reports files/s.
func BenchmarkIndexMarkdown(b *testing.B) {
	n := 1000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 10000
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*2000); err != nil {
		b.Fatal(err)
	}
	words := strings.Fields(text.String())
	for _, tc := range []struct{ name, spec string }{{"lexical", "none"}, {"hashing384", "ollama:hashing384"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				e := newEnv(b)
				e.opts.Embedders = func(string) (embed.Embedder, error) { return namedEmbedder{embed.Hashing{Dim: 384}, tc.spec}, nil }
				if tc.spec == "none" {
					e.opts.Embedders = nil
				}
				e.svc, e.b = e.open(b)
				dir := e.vault(b, CreateVaultRequest{Name: "bench", EmbeddingModel: tc.spec}).Path
				for i := range n {
					at := (i * 300) % (len(words) - 300)
					body := fmt.Sprintf("# Note %d\n\n## Part one\n\n%s\n\n## Part two\n\n%s\n", i, strings.Join(words[at:at+150], " "), strings.Join(words[at+150:at+300], " "))
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note%05d.md", i)), []byte(body), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rep, err := e.svc.Index(b.Context(), Owner(), "bench", IndexRequest{}, nil)
				if err != nil || rep.Indexed != n {
					b.Fatalf("%+v %v", rep, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// namedEmbedder is an embedder under another spec.
type namedEmbedder struct {
	embed.Embedder
	spec string
}

func (n namedEmbedder) Spec() string { return n.spec }

// queryEnv makes a vault of n chunks of about 60 words of generated text
// (ten to a document) with vectors of the hashing embedder, written
// straight into its index, on the store at url ("" for a new SQLite one),
// and returns it and its words.
func queryEnv(tb testing.TB, n int, keep bool, url string) (*env, []string) {
	tb.Helper()
	e := newEnv(tb)
	if url != "" {
		e.url = url
	}
	h := namedEmbedder{embed.Hashing{Dim: 384}, "ollama:hashing384"}
	e.opts.Embedders = func(string) (embed.Embedder, error) { return h, nil }
	e.opts.KeepSearchers = keep
	e.svc, e.b = e.open(tb)
	e.vault(tb, CreateVaultRequest{Name: "bench", EmbeddingModel: h.spec})
	v, err := e.svc.lookup(tb.Context(), Owner(), "bench")
	if err != nil {
		tb.Fatal(err)
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*400); err != nil {
		tb.Fatal(err)
	}
	words := strings.Fields(text.String())
	idx, err := e.b.Index(tb.Context(), v.ID)
	if err != nil {
		tb.Fatal(err)
	}
	for d := 0; d < n/10; d++ {
		var chunks []index.Chunk
		var texts []string
		for c := range 10 {
			at := ((d*10 + c) * 60) % (len(words) - 60)
			texts = append(texts, strings.Join(words[at:at+60], " "))
		}
		vectors, err := h.Embed(tb.Context(), texts)
		if err != nil {
			tb.Fatal(err)
		}
		for c, t := range texts {
			chunks = append(chunks, index.Chunk{Text: t, Heading: fmt.Sprintf("Doc %d", d), Vector: vectors[c]})
		}
		if err := idx.Put(tb.Context(), index.Doc{Path: fmt.Sprintf("doc%05d.md", d), Hash: "h"}, chunks); err != nil {
			tb.Fatal(err)
		}
	}
	if err := e.b.Registry().SetPin(tb.Context(), v.ID, &store.Pin{Model: h.spec, Dim: 384}); err != nil {
		tb.Fatal(err)
	}
	return e, words
}

// BenchmarkQuery measures query latency, hybrid, over 10,000 chunks of
// about 60 words (100,000, the scale, with CTXKIT_BENCH_FULL=1),
// through a service that keeps the searcher (lexicon and vectors in
// memory) as a server does, on SQLite and on PostgreSQL (skipped without
// $CTXKIT_TEST_POSTGRES). It reports the p50 and p99 of the queries it
// ran, the searcher's load time and the heap it holds.
func BenchmarkQuery(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchQuery(b, "") })
	b.Run("postgres", func(b *testing.B) { benchQuery(b, pgtest.URL(b)) })
}

func benchQuery(b *testing.B, url string) {
	n := 10000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 100000
	}
	e, words := queryEnv(b, n, true, url)
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = words[(i*7919)%len(words)] + " " + words[(i*104729)%len(words)]
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	if _, err := e.svc.Query(b.Context(), Owner(), "bench", QueryRequest{Query: queries[0], NResults: 10}); err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := e.svc.Query(b.Context(), Owner(), "bench", QueryRequest{Query: queries[i%len(queries)], NResults: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MB")
}

// BenchmarkIndexResearchVault indexes the real documents of
// ../shared/corpus/research-vault (a PDF, a DOCX, Markdown and text;
// skipped when absent) into a new lexical vault: extraction, chunking with
// locators, and the index's writes. It reports the time of one whole index.
func BenchmarkIndexResearchVault(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "corpus", "research-vault")
	files, err := os.ReadDir(src)
	if err != nil {
		b.Skipf("corpus absent (%v): benchmark skipped", err)
	}
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b)
		e.opts.Embedders = nil
		e.svc, e.b = e.open(b)
		dir := e.vault(b, CreateVaultRequest{Name: "research", EmbeddingModel: "none"}).Path
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(src, f.Name()))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f.Name()), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		rep, err := e.svc.Index(b.Context(), Owner(), "research", IndexRequest{}, nil)
		if err != nil || rep.Indexed != len(files) {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}
