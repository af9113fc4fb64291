package chunk

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxkit/ctxkit/internal/extract"
)

// TestCorpus chunks the real documents in ../shared/corpus/research-vault
// (skipped when absent) and checks the properties, and that PDF chunks keep
// their pages.
func TestCorpus(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "research-vault")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus absent (%v): real-document test skipped", err)
	}
	for _, name := range []string{"rag_survey_paper.pdf", "rag_comparison.docx", "personal_notes.md", "blog_article.txt"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			doc, err := extract.Extract(context.Background(), name, f)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Words: 120, Overlap: 20}
			chunks := Split(doc, opts)
			if len(chunks) == 0 {
				t.Fatal("no chunks")
			}
			checkProperties(t, doc, opts, chunks)
			if doc.Format == extract.PDF {
				pages := map[int]bool{}
				for _, c := range chunks {
					pages[c.Page] = true
				}
				for p := 1; p <= 4; p++ {
					if !pages[p] {
						t.Errorf("no chunk starts on page %d (pages %v)", p, pages)
					}
				}
			}
			if doc.Format == extract.Markdown && chunks[0].HeadingPath != "My Notes on Retrieval-Augmented Generation (RAG) > Overview" {
				t.Errorf("first chunk's path %q", chunks[0].HeadingPath)
			}
		})
	}
}
