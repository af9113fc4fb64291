package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/benchdata"
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
	for _, tc := range []struct {
		name     string
		embedder embed.Embedder
	}{{"lexical", nil}, {"hashing384", embed.Hashing{Dim: 384}}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				r, err := Open(Options{DataDir: b.TempDir(), Cwd: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				v, err := r.Init(b.Context(), InitOptions{Name: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					at := (i * 300) % (len(words) - 300)
					body := fmt.Sprintf("# Note %d\n\n## Part one\n\n%s\n\n## Part two\n\n%s\n", i, strings.Join(words[at:at+150], " "), strings.Join(words[at+150:at+300], " "))
					if err := os.WriteFile(filepath.Join(v.Dir, fmt.Sprintf("note%05d.md", i)), []byte(body), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				rep, err := v.Index(b.Context(), IndexOptions{Embedder: tc.embedder})
				if err != nil || rep.Indexed != n {
					b.Fatalf("%+v %v", rep, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "files/s")
		})
	}
}

// queryVault makes a vault of n chunks of about 60 words of generated text
// (ten to a document) with vectors of e, and returns it and its words.
func queryVault(tb testing.TB, n int, e embed.Embedder) (*Vault, []string) {
	tb.Helper()
	r, err := Open(Options{DataDir: tb.TempDir(), Cwd: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	v, err := r.Init(tb.Context(), InitOptions{Name: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	var text strings.Builder
	if err := benchdata.WriteText(&text, n*400); err != nil {
		tb.Fatal(err)
	}
	words := strings.Fields(text.String())
	idx, err := v.openIndex(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	defer idx.Close()
	for d := 0; d < n/10; d++ {
		var chunks []index.Chunk
		var texts []string
		for c := range 10 {
			at := ((d*10 + c) * 60) % (len(words) - 60)
			texts = append(texts, strings.Join(words[at:at+60], " "))
		}
		vectors, err := e.Embed(tb.Context(), texts)
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
	dim := len(embedOne(tb, e, "x"))
	if err := v.writePin(pin{Model: e.Spec(), Dim: dim}); err != nil {
		tb.Fatal(err)
	}
	return v, words
}

func embedOne(tb testing.TB, e embed.Embedder, text string) []float32 {
	tb.Helper()
	vs, err := e.Embed(tb.Context(), []string{text})
	if err != nil {
		tb.Fatal(err)
	}
	return vs[0]
}

// TestSearcherMatchesQuery: a Searcher, which ranks with its lexicon,
// answers as Vault.Query, which asks the index.
func TestSearcherMatchesQuery(t *testing.T) {
	h := embed.Hashing{Dim: 64}
	v, words := queryVault(t, 500, h)
	s, err := v.Searcher(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.lexicon == nil || s.lexicon.Len() != 500 {
		t.Fatalf("the Searcher has no lexicon of the 500 chunks: %+v", s.lexicon)
	}
	for i := range 40 {
		q := words[(i*7919)%len(words)] + " " + words[(i*104729)%len(words)]
		if i%5 == 0 {
			q = words[i] + " Doc 12 absentword"
		}
		for _, n := range []int{3, 10} {
			got, err := s.Query(t.Context(), q, n)
			if err != nil {
				t.Fatal(err)
			}
			want, err := v.Query(t.Context(), q, n, h)
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != "hybrid" || !slices.Equal(got.Results, want.Results) {
				t.Fatalf("%q n=%d:\nSearcher %+v\nQuery    %+v", q, n, got, want)
			}
		}
	}
}

// BenchmarkQuery measures query latency, lexical and hybrid, over 10,000
// chunks of about 60 words (100,000, the scale, with
// CTXKIT_BENCH_FULL=1), with a Searcher held open as a server would. It
// reports the p50 and p99 of the queries it ran, and the Searcher's load
// time and the heap it holds (vectors and lexicon).
func BenchmarkQuery(b *testing.B) {
	n := 10000
	if os.Getenv("CTXKIT_BENCH_FULL") != "" {
		n = 100000
	}
	h := embed.Hashing{Dim: 384}
	v, words := queryVault(b, n, h)
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = words[(i*7919)%len(words)] + " " + words[(i*104729)%len(words)]
	}
	for _, tc := range []struct {
		name string
		e    embed.Embedder
	}{{"lexical", nil}, {"hybrid", h}} {
		b.Run(tc.name, func(b *testing.B) {
			// The load time and the heap the Searcher holds: vectors and
			// lexicon.
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			var s *Searcher
			if tc.e == nil {
				// A lexical-only searcher over the same index: no vectors
				// (the pinned embedder would be refused without one).
				x, err := v.openIndex(b.Context())
				if err != nil {
					b.Fatal(err)
				}
				s = &Searcher{idx: x}
				if s.lexicon, err = index.LoadLexicon(b.Context(), x); err != nil {
					b.Fatal(err)
				}
			} else {
				var err error
				if s, err = v.Searcher(b.Context(), tc.e); err != nil {
					b.Fatal(err)
				}
			}
			defer s.Close()
			load := time.Since(start)
			runtime.GC()
			runtime.ReadMemStats(&after)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := s.Query(b.Context(), queries[i%len(queries)], 10); err != nil {
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
		})
	}
}
