package chunk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/extract"
)

// genMarkdown returns n deterministic Markdown files of about 300 to 1,500
// words each: a title, a few sections and subsections, paragraphs and
// lists, like notes in a vault.
func genMarkdown(n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 11))
	vocab := strings.Fields("the vault index query chunk heading retrieval embedding vector lexical search document note paragraph model server context window token page file answer reason method result data")
	sentence := func(b *strings.Builder) {
		for i := range 6 + r.IntN(14) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[r.IntN(len(vocab))])
		}
		b.WriteString(". ")
	}
	files := make([][]byte, n)
	for f := range files {
		var b strings.Builder
		fmt.Fprintf(&b, "# Note %d\n\n", f)
		for s := range 2 + r.IntN(4) {
			fmt.Fprintf(&b, "## Section %d\n\n", s)
			for range 1 + r.IntN(4) {
				if r.IntN(4) == 0 {
					for range 3 {
						b.WriteString("- ")
						sentence(&b)
						b.WriteByte('\n')
					}
				} else {
					for range 2 + r.IntN(6) {
						sentence(&b)
					}
				}
				b.WriteString("\n\n")
			}
			if r.IntN(2) == 0 {
				b.WriteString("### Details\n\n")
				sentence(&b)
				b.WriteString("\n\n")
			}
		}
		files[f] = []byte(b.String())
	}
	return files
}

// BenchmarkExtractChunk10k extracts and chunks 10,000 generated Markdown
// files per iteration, with the default options, and reports files/s.
func BenchmarkExtractChunk10k(b *testing.B) {
	files := genMarkdown(10_000)
	ctx := context.Background()
	var chunks int
	b.ResetTimer()
	for b.Loop() {
		chunks = 0
		for i, data := range files {
			doc, err := extract.Options{}.ExtractBytes(ctx, fmt.Sprintf("n%d.md", i), data)
			if err != nil {
				b.Fatal(err)
			}
			chunks += len(Split(doc, Options{}))
		}
	}
	b.ReportMetric(float64(len(files)*b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(chunks), "chunks/op")
}
