// Package indextest is the conformance suite of vault indexes: every
// backend of index.Index passes Run unchanged, as restic's backends pass
// one suite.
package indextest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ctxkit/ctxkit/vault/index"
)

// Run runs the suite against indexes made by open, a new empty one each
// time.
func Run(t *testing.T, open func(t *testing.T) index.Index) {
	t.Run("PutGetReplaceDelete", func(t *testing.T) { putGetReplaceDelete(t, open(t)) })
	t.Run("Lexical", func(t *testing.T) { lexical(t, open(t)) })
	t.Run("HostileQueries", func(t *testing.T) { hostileQueries(t, open(t)) })
	t.Run("Vectors", func(t *testing.T) { vectors(t, open(t)) })
	t.Run("Texts", func(t *testing.T) { texts(t, open(t)) })
	t.Run("Chunks", func(t *testing.T) { docChunks(t, open(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, open(t)) })
	t.Run("Generation", func(t *testing.T) { generation(t, open(t)) })
	t.Run("Rebuild", func(t *testing.T) { rebuild(t, open(t)) })
	t.Run("RebuildSuperseded", func(t *testing.T) { rebuildSuperseded(t, open(t)) })
}

// locators are the locators chunks gives its chunks in turn: every unit,
// none, and one recorded before locators were.
var locators = []index.Locator{
	{Unit: index.Page, Start: 3, End: 4}, {Unit: index.Line, Start: 12, End: 40}, {},
	{Unit: index.Paragraph, Start: 7, End: 7}, {Unit: index.Unrecorded, Start: 2},
}

func chunks(texts ...string) []index.Chunk {
	out := make([]index.Chunk, len(texts))
	for i, s := range texts {
		out[i] = index.Chunk{Text: s, Heading: fmt.Sprintf("Part %d", i+1), Loc: locators[i%len(locators)]}
	}
	return out
}

func putGetReplaceDelete(t *testing.T, x index.Index) {
	ctx := t.Context()
	doc := index.Doc{Path: "notes/plan.md", Hash: "h1", Meta: map[string]string{"author": "ann"}}
	if err := x.Put(ctx, doc, chunks("first chunk", "second chunk")); err != nil {
		t.Fatal(err)
	}
	got, err := x.Doc(ctx, "notes/plan.md")
	if err != nil || got.Hash != "h1" || got.Chunks != 2 || got.Meta["author"] != "ann" || got.Indexed.IsZero() {
		t.Fatalf("Doc = %+v, %v", got, err)
	}
	hits, _ := x.Lexical(ctx, "second", 5)
	if len(hits) != 1 || hits[0].Doc != "notes/plan.md" || hits[0].Index != 1 || hits[0].Heading != "Part 2" || hits[0].Loc != locators[1] || hits[0].Rank != 1 {
		t.Fatalf("hit = %+v", hits)
	}
	c, err := x.Chunk(ctx, hits[0].ID)
	if err != nil || c.Text != "second chunk" || c.Loc != locators[1] {
		t.Errorf("Chunk = %+v, %v", c, err)
	}
	if m, err := x.ChunksByID(ctx, []int64{hits[0].ID, 1 << 40}); err != nil || len(m) != 1 || m[hits[0].ID].Text != "second chunk" || m[hits[0].ID].Heading != "Part 2" || m[hits[0].ID].Loc != locators[1] {
		t.Errorf("ChunksByID = %+v, %v; want the one chunk held", m, err)
	}

	// Replacing a document replaces all its chunks.
	doc.Hash = "h2"
	if err := x.Put(ctx, doc, chunks("only chunk now")); err != nil {
		t.Fatal(err)
	}
	if hits, _ := x.Lexical(ctx, "second", 5); len(hits) != 0 {
		t.Errorf("old chunks still found after replacing: %+v", hits)
	}
	if got, _ := x.Doc(ctx, doc.Path); got.Hash != "h2" || got.Chunks != 1 {
		t.Errorf("after replace: %+v", got)
	}
	if err := x.Put(ctx, index.Doc{Path: "b.txt", Hash: "x"}, chunks("other")); err != nil {
		t.Fatal(err)
	}
	docs, err := x.Docs(ctx)
	if err != nil || len(docs) != 2 || docs[0].Path != "b.txt" || docs[1].Path != "notes/plan.md" {
		t.Errorf("Docs = %+v, %v", docs, err)
	}

	if err := x.Delete(ctx, doc.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Doc(ctx, doc.Path); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("deleted doc: %v, want ErrNotFound", err)
	}
	if hits, _ := x.Lexical(ctx, "chunk", 5); len(hits) != 0 {
		t.Errorf("deleted doc's chunks found: %+v", hits)
	}
	if err := x.Delete(ctx, "never/was.md"); err != nil {
		t.Errorf("deleting a missing doc: %v", err)
	}
	if _, err := x.Chunk(ctx, 1<<40); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("missing chunk: %v", err)
	}
}

func lexical(t *testing.T, x index.Index) {
	ctx := t.Context()
	put := func(path string, texts ...string) {
		t.Helper()
		if err := x.Put(ctx, index.Doc{Path: path, Hash: path}, chunks(texts...)); err != nil {
			t.Fatal(err)
		}
	}
	put("budget.md", "We must cut cloud costs by fifteen percent this quarter.", "Hiring is frozen.")
	put("infra.md", "The cloud migration moves services to containers.")
	put("cake.md", "Lemon cake needs sugar, flour and lemons.")
	hits, err := x.Lexical(ctx, "cloud cost", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Doc != "budget.md" || hits[1].Doc != "infra.md" {
		t.Fatalf("cloud cost: %+v; want budget.md (both words, stemmed) before infra.md", hits)
	}
	if hits[0].Score <= hits[1].Score || hits[0].Rank != 1 || hits[1].Rank != 2 {
		t.Errorf("scores and ranks: %+v", hits)
	}
	if hits, _ := x.Lexical(ctx, "cloud", 1); len(hits) != 1 {
		t.Errorf("n=1 gave %d hits", len(hits))
	}
	if hits, err := x.Lexical(ctx, "submarine", 10); err != nil || len(hits) != 0 {
		t.Errorf("no match: %+v, %v; want none and no error", hits, err)
	}
	if hits, _ := x.Lexical(ctx, "Part", 10); len(hits) == 0 {
		t.Error("heading paths are not searchable")
	}
}

// Query text is the user's or a model's: FTS syntax in it must not be
// obeyed or break the search.
func hostileQueries(t *testing.T, x index.Index) {
	ctx := t.Context()
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "a"}, chunks("alpha beta gamma", "NEAR the end")); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`"`, `alpha"`, `NEAR(alpha beta)`, `text:alpha`, `alpha AND -beta`, `*`, `^alpha`, `(`, `{alpha}`, ``, `   `, "'; DROP TABLE chunks; --", "\x00"} {
		hits, err := x.Lexical(ctx, q, 5)
		if err != nil {
			t.Errorf("query %q: %v", q, err)
		}
		_ = hits
	}
	if hits, _ := x.Lexical(ctx, `text:alpha`, 5); len(hits) != 1 {
		t.Errorf("a column filter is read as words: %+v", hits)
	}
}

func vectors(t *testing.T, x index.Index) {
	ctx := t.Context()
	cs := chunks("one", "two", "three")
	cs[0].Vector = []float32{1, 0, 0}
	cs[1].Vector = []float32{0, 1, 0}
	if err := x.Put(ctx, index.Doc{Path: "v.md", Hash: "v"}, cs); err != nil {
		t.Fatal(err)
	}
	got := map[int64][]float32{}
	if err := x.EachVector(ctx, func(id int64, v []float32) error { got[id] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d vectors, want 2 (a chunk without one is skipped)", len(got))
	}
	vs, err := index.LoadVectors(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := vs.Search([]float32{0, 1, 0}, 1)
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %+v, %v", hits, err)
	}
	c, err := x.Chunk(ctx, hits[0].ID)
	if err != nil || c.Text != "two" || !slices.Equal(c.Vector, []float32{0, 1, 0}) {
		t.Errorf("nearest chunk: %+v, %v", c, err)
	}
}

// texts: EachText gives every chunk's text and heading, by ascending id,
// and stops at fn's error.
func texts(t *testing.T, x index.Index) {
	ctx := t.Context()
	if err := x.Put(ctx, index.Doc{Path: "b.md", Hash: "b"}, chunks("bravo one", "bravo two")); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "a"}, chunks("alpha")); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "b.md", Hash: "b2"}, chunks("bravo again", "", "bravo three")); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id            int64
		text, heading string
	}
	var got []row
	if err := x.EachText(ctx, func(id int64, text, heading string) error {
		got = append(got, row{id, text, heading})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alpha": "Part 1", "bravo again": "Part 1", "": "Part 2", "bravo three": "Part 3"}
	if len(got) != len(want) {
		t.Fatalf("EachText gave %+v, want the 4 chunks indexed now", got)
	}
	for i, r := range got {
		if h, ok := want[r.text]; !ok || h != r.heading {
			t.Errorf("chunk %d: text %q heading %q, not one indexed", r.id, r.text, r.heading)
		}
		if i > 0 && r.id <= got[i-1].id {
			t.Errorf("ids out of order: %d after %d", r.id, got[i-1].id)
		}
		c, err := x.Chunk(ctx, r.id)
		if err != nil || c.Text != r.text {
			t.Errorf("chunk %d: %+v, %v; EachText gave %q", r.id, c, err, r.text)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := x.EachText(ctx, func(int64, string, string) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("fn's error: %v after %d calls, want it at once", err, n)
	}
}

// Writers and readers at once: every search sees whole documents.
func concurrent(t *testing.T, x index.Index) {
	ctx := context.WithoutCancel(t.Context())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				path := fmt.Sprintf("w%d/doc%d.md", w, i%3)
				if err := x.Put(ctx, index.Doc{Path: path, Hash: fmt.Sprint(i)}, chunks("shared words here", "more shared words")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				hits, err := x.Lexical(ctx, "shared", 100)
				if err != nil {
					errs <- err
					return
				}
				if len(hits)%2 != 0 {
					errs <- fmt.Errorf("a search saw half a document: %d hits", len(hits))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	docs, _ := x.Docs(ctx)
	if len(docs) != 12 {
		t.Errorf("%d documents, want 12", len(docs))
	}
}

// generation checks that every change moves the generation and reads do
// not.
func generation(t *testing.T, x index.Index) {
	defer x.Close()
	ctx := t.Context()
	gen := func() int64 {
		t.Helper()
		g, err := x.Generation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g0 := gen()
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "1"}, []index.Chunk{{Text: "alpha"}}); err != nil {
		t.Fatal(err)
	}
	g1 := gen()
	if g1 == g0 {
		t.Error("a Put left the generation")
	}
	if _, err := x.Lexical(ctx, "alpha", 5); err != nil {
		t.Fatal(err)
	}
	if gen() != g1 {
		t.Error("a read moved the generation")
	}
	// The same document again, same chunk count: still a change.
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "2"}, []index.Chunk{{Text: "beta"}}); err != nil {
		t.Fatal(err)
	}
	g2 := gen()
	if g2 == g1 {
		t.Error("replacing a document left the generation")
	}
	if err := x.Delete(ctx, "a.md"); err != nil {
		t.Fatal(err)
	}
	if gen() == g2 {
		t.Error("a Delete left the generation")
	}
}

// paths returns the paths of x's documents.
func paths(t *testing.T, x index.Index) []string {
	t.Helper()
	docs, err := x.Docs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range docs {
		out = append(out, d.Path)
	}
	return out
}

// hits returns the documents a lexical search for q finds.
func hits(t *testing.T, x index.Index, q string) []string {
	t.Helper()
	hs, err := x.Lexical(t.Context(), q, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.Doc)
	}
	slices.Sort(out)
	return out
}

// rebuild: queries read the old generation until Commit, then the new one
// at once; the index's own Put and Delete during the rebuild reach both,
// and the builder's older copy never undoes them; chunk ids are never
// reused; Abort leaves the index as it was.
func rebuild(t *testing.T, x index.Index) {
	defer x.Close()
	ctx := t.Context()
	for _, p := range []string{"keep.md", "gone.md", "edited.md"} {
		if err := x.Put(ctx, index.Doc{Path: p, Hash: "old"}, chunks("old "+p)); err != nil {
			t.Fatal(err)
		}
	}
	oldIDs := map[int64]bool{}
	if err := x.EachText(ctx, func(id int64, _, _ string) error { oldIDs[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	g0, _ := x.Generation(ctx)

	b, err := x.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, index.Doc{Path: "keep.md", Hash: "new"}, chunks("rebuilt keep")); err != nil {
		t.Fatal(err)
	}
	if got := hits(t, x, "rebuilt"); len(got) != 0 {
		t.Fatalf("before Commit a query saw the new generation: %v", got)
	}
	if got := hits(t, x, "old"); len(got) != 3 {
		t.Fatalf("before Commit a query found %v, want the 3 old documents", got)
	}
	// Changes through the index during the rebuild.
	if err := x.Delete(ctx, "gone.md"); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "edited.md", Hash: "live"}, chunks("live edit")); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "added.md", Hash: "live"}, chunks("live addition")); err != nil {
		t.Fatal(err)
	}
	// The builder's copies, read before those changes, come late.
	if err := b.Put(ctx, index.Doc{Path: "gone.md", Hash: "new"}, chunks("rebuilt gone")); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, index.Doc{Path: "edited.md", Hash: "new"}, chunks("rebuilt edited")); err != nil {
		t.Fatal(err)
	}
	if got := hits(t, x, "live"); !slices.Equal(got, []string{"added.md", "edited.md"}) {
		t.Fatalf("a change during the rebuild is not searchable at once: %v", got)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if g, _ := x.Generation(ctx); g == g0 {
		t.Error("a committed rebuild left the generation")
	}
	if got := paths(t, x); !slices.Equal(got, []string{"added.md", "edited.md", "keep.md"}) {
		t.Errorf("after Commit the documents are %v", got)
	}
	if got := hits(t, x, "rebuilt"); !slices.Equal(got, []string{"keep.md"}) {
		t.Errorf("after Commit the builder's documents found: %v, want keep.md alone", got)
	}
	if got := hits(t, x, "old"); len(got) != 0 {
		t.Errorf("after Commit the old generation is still searched: %v", got)
	}
	if err := x.EachText(ctx, func(id int64, text, _ string) error {
		if oldIDs[id] {
			t.Errorf("chunk id %d (%q) reused from the old generation", id, text)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range oldIDs {
		if c, err := x.Chunk(ctx, id); !errors.Is(err, index.ErrNotFound) {
			t.Errorf("chunk %d of the old generation after Commit: %+v, %v", id, c, err)
		}
	}

	// Abort: nothing changes, and the next rebuild starts empty.
	b, err = x.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, index.Doc{Path: "aborted.md", Hash: "x"}, chunks("aborted")); err != nil {
		t.Fatal(err)
	}
	if err := b.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := paths(t, x); !slices.Equal(got, []string{"added.md", "edited.md", "keep.md"}) {
		t.Errorf("after Abort the documents are %v", got)
	}
	if err := x.Put(ctx, index.Doc{Path: "after.md", Hash: "x"}, chunks("after abort")); err != nil {
		t.Fatal(err)
	}
	b, err = x.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := paths(t, x); len(got) != 0 {
		t.Errorf("an empty rebuild committed left %v", got)
	}
}

// rebuildSuperseded: a later rebuild wins; the earlier builder fails with
// ErrSuperseded and its Abort harms nothing.
func rebuildSuperseded(t *testing.T, x index.Index) {
	defer x.Close()
	ctx := t.Context()
	first, err := x.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := x.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Put(ctx, index.Doc{Path: "a.md", Hash: "1"}, chunks("first")); !errors.Is(err, index.ErrSuperseded) {
		t.Errorf("Put of a superseded rebuild: %v, want ErrSuperseded", err)
	}
	if err := second.Put(ctx, index.Doc{Path: "b.md", Hash: "2"}, chunks("second")); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); !errors.Is(err, index.ErrSuperseded) {
		t.Errorf("Commit of a superseded rebuild: %v, want ErrSuperseded", err)
	}
	if err := first.Abort(ctx); err != nil {
		t.Errorf("Abort of a superseded rebuild: %v", err)
	}
	if err := second.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := paths(t, x); !slices.Equal(got, []string{"b.md"}) {
		t.Errorf("documents %v, want the later rebuild's", got)
	}
	if err := second.Commit(ctx); !errors.Is(err, index.ErrSuperseded) {
		t.Errorf("a second Commit: %v, want ErrSuperseded (the rebuild is over)", err)
	}
}

// docChunks: Chunks gives a document's chunks in order, with their
// vectors, as Put stored them; the current ones after a replacement and
// ErrNotFound once the document is deleted (or never was).
func docChunks(t *testing.T, x index.Index) {
	ctx := t.Context()
	if _, err := x.Chunks(ctx, "none.md"); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("Chunks of a missing document: %v, want ErrNotFound", err)
	}
	cs := chunks("one", "two", "three", "", "five")
	cs[0].Vector = []float32{1, 0.5, -0.25}
	cs[2].Vector = []float32{0, 1, 0}
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "a"}, cs); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "b.md", Hash: "b"}, chunks("other")); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "empty.md", Hash: "e"}, nil); err != nil {
		t.Fatal(err)
	}
	check := func(path string, want []index.Chunk) {
		t.Helper()
		got, err := x.Chunks(ctx, path)
		if err != nil {
			t.Fatalf("Chunks(%s): %v", path, err)
		}
		if len(got) != len(want) {
			t.Fatalf("Chunks(%s) gave %d chunks, want %d: %+v", path, len(got), len(want), got)
		}
		for i, c := range got {
			w := want[i]
			if c.Doc != path || c.Index != i || c.Heading != w.Heading || c.Loc != w.Loc || c.Text != w.Text || !slices.Equal(c.Vector, w.Vector) {
				t.Errorf("Chunks(%s)[%d] = %+v, want %+v", path, i, c, w)
			}
			if (c.Vector == nil) != (w.Vector == nil) {
				t.Errorf("Chunks(%s)[%d] vector %v, want %v", path, i, c.Vector, w.Vector)
			}
			one, err := x.Chunk(ctx, c.ID)
			if err != nil || one.Text != c.Text || one.Doc != path || one.Loc != c.Loc {
				t.Errorf("Chunk(%d) of Chunks(%s) = %+v, %v", c.ID, path, one, err)
			}
		}
	}
	check("a.md", cs)
	check("b.md", chunks("other"))
	check("empty.md", nil)
	if err := x.Put(ctx, index.Doc{Path: "a.md", Hash: "a2"}, chunks("replaced")); err != nil {
		t.Fatal(err)
	}
	check("a.md", chunks("replaced"))
	if err := x.Delete(ctx, "a.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Chunks(ctx, "a.md"); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("Chunks of a deleted document: %v, want ErrNotFound", err)
	}
}
