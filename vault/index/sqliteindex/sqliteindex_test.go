package sqliteindex_test

import (
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/migrate"
	"github.com/ctxkit/ctxkit/internal/sqlitedb/sqlitedbtest"
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

func TestConformanceInMemory(t *testing.T) {
	indextest.Run(t, func(t *testing.T) index.Index {
		x, err := sqliteindex.OpenMemory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	})
}

// TestInMemoryIndexesAreSeparate: each OpenMemory is an index of its own.
func TestInMemoryIndexesAreSeparate(t *testing.T) {
	a, err := sqliteindex.OpenMemory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqliteindex.OpenMemory(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Put(t.Context(), index.Doc{Path: "a.md", Hash: "h"}, []index.Chunk{{Text: "only in a"}}); err != nil {
		t.Fatal(err)
	}
	if docs, err := b.Docs(t.Context()); err != nil || len(docs) != 0 {
		t.Errorf("the other index holds %+v, %v", docs, err)
	}
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
	_, err = sqliteindex.Open(t.Context(), path)
	if !errors.Is(err, migrate.ErrNewer) || !strings.Contains(err.Error(), "upgrade ctxkit") || !strings.Contains(err.Error(), "99") {
		t.Errorf("a newer schema: %v", err)
	}
}

// TestOpenWhileWriteLocked: opening a current index takes no write lock,
// so it succeeds while another connection holds one.
func TestOpenWhileWriteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x, err := sqliteindex.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	sqlitedbtest.HoldWriteLock(t, path)
	x, err = sqliteindex.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock: %v", err)
	}
	defer x.Close()
	if _, err := x.Generation(t.Context()); err != nil {
		t.Errorf("Generation: %v", err)
	}
}

// TestConcurrentFirstOpens opens one new file from several goroutines, each
// with its own Index as separate processes would have.
func TestConcurrentFirstOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	sqlitedbtest.OpenConcurrently(t, 6, func() (io.Closer, error) { return sqliteindex.Open(t.Context(), path) })
}

// TestOpenOldFiles opens index files older code wrote, made by
// internal/sqlitedb/testdata/mkfixtures/*.go.txt at the commits their names
// give: schema 1 (before the generation) and schema 2, both without
// application_id. Their documents are all there and searchable, the
// generation works, and the file is marked as a vault index. Their chunks
// are unrecorded (no locator yet) and their documents' hashes cleared, so
// that the next index extracts them again.
func TestOpenOldFiles(t *testing.T) {
	for _, fixture := range []string{"index-5aa90b1.db.gz", "index-be54a98.db.gz"} {
		t.Run(fixture, func(t *testing.T) {
			path := sqlitedbtest.Fixture(t, filepath.Join("testdata", fixture), "index.db")
			ctx := t.Context()
			x, err := sqliteindex.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			d, err := x.Doc(ctx, "a.md")
			if err != nil || d.Hash != "" || d.Meta["k"] != "v" || d.Chunks != 1 {
				t.Errorf("old document: %+v, %v", d, err)
			}
			hits, err := x.Lexical(ctx, "persistent", 3)
			if err != nil || len(hits) != 1 || hits[0].Heading != "A" {
				t.Fatalf("search of the old index: %+v, %v", hits, err)
			}
			if c, err := x.Chunk(ctx, hits[0].ID); err != nil || len(c.Vector) != 2 || c.Vector[1] != 0.8 || c.Loc != (index.Locator{Unit: index.Unrecorded}) {
				t.Errorf("old chunk: %+v, %v", c, err)
			}
			g, err := x.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := x.Delete(ctx, "a.md"); err != nil {
				t.Fatal(err)
			}
			if g2, err := x.Generation(ctx); err != nil || g2 != g+1 {
				t.Errorf("generation after a delete: %d, %v; was %d", g2, err, g)
			}
			if hits, err := x.Lexical(ctx, "persistent", 3); err != nil || len(hits) != 0 {
				t.Errorf("search after the delete: %+v, %v", hits, err)
			}
			var appID int
			if err := x.ReaderForTest().QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil || appID != 0x63747869 {
				t.Errorf("application_id: %#x, %v", appID, err)
			}
		})
	}
}

// TestOpenSchema3 opens an index file of schema 3, the last without
// locators (made by internal/sqlitedb/testdata/mkfixtures/00dfb3a.go.txt),
// whose current tables are the second set after a rebuild: its chunks
// come back unrecorded, a PDF chunk keeping the page of its first word,
// every document's hash is cleared, and a document put again, and a
// rebuild, record locators.
func TestOpenSchema3(t *testing.T) {
	ctx := t.Context()
	x, err := sqliteindex.Open(ctx, sqlitedbtest.Fixture(t, filepath.Join("testdata", "index-00dfb3a.db.gz"), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	docs, err := x.Docs(ctx)
	if err != nil || len(docs) != 2 || docs[0].Hash != "" || docs[1].Hash != "" || docs[1].Meta["k"] != "v" {
		t.Fatalf("old documents: %+v, %v", docs, err)
	}
	pdf, err := x.Chunks(ctx, "paper.pdf")
	if err != nil || len(pdf) != 1 || pdf[0].Loc != (index.Locator{Unit: index.Unrecorded, Start: 3}) || len(pdf[0].Vector) != 2 {
		t.Fatalf("old PDF chunk: %+v, %v", pdf, err)
	}
	if hits, err := x.Lexical(ctx, "markdown", 3); err != nil || len(hits) != 1 || hits[0].Loc != (index.Locator{Unit: index.Unrecorded}) {
		t.Fatalf("old Markdown chunk: %+v, %v", hits, err)
	}
	loc := index.Locator{Unit: index.Page, Start: 3, End: 4}
	if err := x.Put(ctx, index.Doc{Path: "paper.pdf", Hash: "h1"}, []index.Chunk{{Text: "persistent words from page three", Loc: loc}}); err != nil {
		t.Fatal(err)
	}
	if hits, err := x.Lexical(ctx, "persistent", 3); err != nil || len(hits) != 1 || hits[0].Loc != loc {
		t.Fatalf("chunk put again: %+v, %v", hits, err)
	}
	b, err := x.Rebuild(ctx) // fills the first set, emptied and made anew
	if err != nil {
		t.Fatal(err)
	}
	line := index.Locator{Unit: index.Line, Start: 1, End: 2}
	if err := b.Put(ctx, index.Doc{Path: "a.md", Hash: "h2"}, []index.Chunk{{Text: "markdown with lines", Loc: line}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := x.Lexical(ctx, "markdown", 3); err != nil || len(hits) != 1 || hits[0].Loc != line {
		t.Fatalf("after a rebuild: %+v, %v", hits, err)
	}
}

// TestOpenRefusesAnotherStoresFile: an episodic store's file from before the
// marks is not taken for an index, and is left as it was.
func TestOpenRefusesAnotherStoresFile(t *testing.T) {
	path := sqlitedbtest.Fixture(t, "../../episodic/sqliteepisodic/testdata/episodes-be54a98.db.gz", "episodes.db")
	if _, err := sqliteindex.Open(t.Context(), path); !errors.Is(err, migrate.ErrForeign) {
		t.Fatalf("Open of an episodes file: %v, want migrate.ErrForeign", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_schema WHERE name IN ('docs', 'chunks', 'meta')`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the episodes file got index tables: %d, %v", tables, err)
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
