package sqliteindex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/indextest"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

func TestConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) index.Index {
		x, err := sqliteindex.Open(t.Context(), filepath.Join(t.TempDir(), "index.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

func TestReopenKeepsTheIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir with space", "index.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	x, err := sqliteindex.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Put(t.Context(), index.Doc{Path: "a.md", Hash: "h", Meta: map[string]string{"k": "v"}}, []index.Chunk{{Text: "persistent words", Vector: []float32{0.6, 0.8}}}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	x, err = sqliteindex.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	hits, err := x.Lexical(t.Context(), "persistent", 3)
	if err != nil || len(hits) != 1 {
		t.Fatalf("after reopening: %+v, %v", hits, err)
	}
	d, _ := x.Doc(t.Context(), "a.md")
	if d.Meta["k"] != "v" {
		t.Errorf("meta after reopening: %+v", d)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x, err := sqliteindex.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.SetUserVersionForTest(t.Context(), 99); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if _, err := sqliteindex.Open(t.Context(), path); err == nil || !strings.Contains(err.Error(), "upgrade ctxkit") {
		t.Errorf("a newer schema: %v", err)
	}
}

// TestQueryWords checks that a query's words are those of FTS5's
// tokenizer: a decomposed "naïve" is one word, "x²" is one word and does
// not find a lone "x".
func TestQueryWords(t *testing.T) {
	x, err := sqliteindex.Open(t.Context(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	chunks := []index.Chunk{{Text: "a naïve approach"}, {Text: "x² grows"}, {Text: "x marks"}}
	if err := x.Put(t.Context(), index.Doc{Path: "a.md", Hash: "h"}, chunks); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]string{"nai\u0308ve": "a naïve approach", "x²": "x² grows", "X": "x marks"} {
		hits, err := x.Lexical(t.Context(), query, 5)
		if err != nil || len(hits) != 1 || hits[0].Text != want {
			t.Errorf("Lexical(%q) = %+v, %v; want the chunk %q", query, hits, err, want)
		}
	}
}
