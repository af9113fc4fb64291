package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/benchdata"
	"github.com/ctxkit/ctxkit/vault/embed"
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
