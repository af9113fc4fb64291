package pgindex_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/pgdb/pgtest"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/indextest"
	"github.com/ctxkit/ctxkit/vault/index/pgindex"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// TestConformance runs the suite with each test a new vault of one
// schema, next to other vaults' rows.
func TestConformance(t *testing.T) {
	db := pgtest.DB(t, pgindex.Migrate)
	indextest.Run(t, func(t *testing.T) index.Index {
		x := pgindex.New(db, pgtest.VaultID())
		t.Cleanup(func() { x.Close() })
		return x
	})
}

// TestTwoPools: what one process writes another sees at once, its
// generation included; two vaults of one schema are separate; Drop
// deletes one vault's rows only.
func TestTwoPools(t *testing.T) {
	url := pgtest.URL(t)
	ctx := t.Context()
	db1, db2 := pgtest.Open(t, url, pgindex.Migrate), pgtest.Open(t, url, pgindex.Migrate)
	id := pgtest.VaultID()
	a, b := pgindex.New(db1, id), pgindex.New(db2, id)
	other := pgindex.New(db1, pgtest.VaultID())

	g0, err := b.Generation(ctx)
	if err != nil || g0 != 0 {
		t.Fatalf("generation of a new vault: %d, %v", g0, err)
	}
	if err := a.Put(ctx, index.Doc{Path: "a.md", Hash: "1"}, []index.Chunk{{Text: "shared alpha", Vector: []float32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	g1, err := b.Generation(ctx)
	if err != nil || g1 == g0 {
		t.Errorf("the other pool's generation after a Put: %d, %v (was %d)", g1, err, g0)
	}
	if hits, err := b.Lexical(ctx, "alpha", 5); err != nil || len(hits) != 1 || hits[0].Doc != "a.md" {
		t.Errorf("the other pool's search: %+v, %v", hits, err)
	}
	if err := other.Put(ctx, index.Doc{Path: "o.md", Hash: "1"}, []index.Chunk{{Text: "other alpha"}}); err != nil {
		t.Fatal(err)
	}
	if g, _ := b.Generation(ctx); g != g1 {
		t.Errorf("a Put to another vault moved the generation: %d, was %d", g, g1)
	}
	if hits, _ := b.Lexical(ctx, "other", 5); len(hits) != 0 {
		t.Errorf("another vault's chunks found: %+v", hits)
	}
	docs, err := other.Docs(ctx)
	if err != nil || len(docs) != 1 || docs[0].Path != "o.md" {
		t.Errorf("the other vault's docs: %+v, %v", docs, err)
	}

	cs, err := b.Chunks(ctx, "a.md")
	if err != nil || len(cs) != 1 || cs[0].Text != "shared alpha" || !slices.Equal(cs[0].Vector, []float32{1, 2}) {
		t.Errorf("Chunks = %+v, %v", cs, err)
	}

	if err := pgindex.Drop(ctx, db2, id); err != nil {
		t.Fatal(err)
	}
	if docs, err := a.Docs(ctx); err != nil || len(docs) != 0 {
		t.Errorf("after Drop: %+v, %v", docs, err)
	}
	if hits, err := other.Lexical(ctx, "alpha", 5); err != nil || len(hits) != 1 || hits[0].Doc != "o.md" {
		t.Errorf("after Drop of one vault, a search of the other: %+v, %v", hits, err)
	}
	var n int
	if err := db1.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ix_state WHERE vault_id = $1) + (SELECT count(*) FROM ix_terms WHERE vault_id = $1)
		+ (SELECT count(*) FROM ix_chunks WHERE vault_id = $1) + (SELECT count(*) FROM ix_docs WHERE vault_id = $1)
		+ (SELECT count(*) FROM ix_sets WHERE vault_id = $1)`, id).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows of the dropped vault: %d, %v", n, err)
	}
}

// TestChunks: a document's chunks in order with their vectors; a
// document without chunks has none; a missing one is ErrNotFound.
func TestChunks(t *testing.T) {
	ctx := t.Context()
	x := pgindex.New(pgtest.DB(t, pgindex.Migrate), pgtest.VaultID())
	cs := []index.Chunk{{Text: "one", Heading: "H", Loc: index.Locator{Unit: index.Page, Start: 3, End: 5}, Vector: []float32{0.5}}, {Text: "two\x00with nul"}, {Text: "three", Vector: []float32{}}}
	if err := x.Put(ctx, index.Doc{Path: "d.md", Hash: "h"}, cs); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(ctx, index.Doc{Path: "empty.md", Hash: "h"}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := x.Chunks(ctx, "d.md")
	if err != nil || len(got) != 3 {
		t.Fatalf("Chunks = %+v, %v", got, err)
	}
	for i, c := range got {
		if c.Doc != "d.md" || c.Index != i || c.Text != cs[i].Text || c.Heading != cs[i].Heading || c.Loc != cs[i].Loc ||
			!slices.Equal(c.Vector, cs[i].Vector) || (c.Vector == nil) != (cs[i].Vector == nil) {
			t.Errorf("chunk %d = %+v, want %+v", i, c, cs[i])
		}
		if i > 0 && c.ID <= got[i-1].ID {
			t.Errorf("ids out of order: %d after %d", c.ID, got[i-1].ID)
		}
	}
	if got, err := x.Chunks(ctx, "empty.md"); err != nil || len(got) != 0 {
		t.Errorf("Chunks of a document without any = %+v, %v", got, err)
	}
	if _, err := x.Chunks(ctx, "missing.md"); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("Chunks of a missing document: %v", err)
	}
	if hits, err := x.Lexical(ctx, "nul", 5); err != nil || len(hits) != 1 || hits[0].Text != "two\x00with nul" {
		t.Errorf("text with NUL: %+v, %v", hits, err)
	}
}

// TestMigrateLocators migrates an index of schema 1, the last without
// locators: its chunks come back unrecorded, a PDF chunk keeping the page
// of its first word, its documents' hashes are cleared, and a document
// put again records its locator.
func TestMigrateLocators(t *testing.T) {
	ctx := t.Context()
	db := pgtest.DB(t, pgindex.MigrateV1ForTest)
	id := pgtest.VaultID()
	for _, q := range []string{
		`INSERT INTO ix_state VALUES ($1, 1, 0, NULL, 1)`,
		`INSERT INTO ix_sets VALUES ($1, 0, 2, 8)`,
		`INSERT INTO ix_docs VALUES ($1, 0, 'paper.pdf', 'h1', NULL, 1, 4, now()), ($1, 0, 'a.md', 'h2', NULL, 1, 4, now())`,
		`INSERT INTO ix_chunks (vault_id, set_id, doc, idx, heading, page, text, length) VALUES
			($1, 0, 'paper.pdf', 0, '', 3, 'words from page three', 4), ($1, 0, 'a.md', 0, 'A', 0, 'markdown without pages', 3)`,
	} {
		if _, err := db.Pool.Exec(ctx, q, id); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := pgindex.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	x := pgindex.New(db, id)
	docs, err := x.Docs(ctx)
	if err != nil || len(docs) != 2 || docs[0].Hash != "" || docs[1].Hash != "" {
		t.Fatalf("old documents: %+v, %v", docs, err)
	}
	pdf, err := x.Chunks(ctx, "paper.pdf")
	if err != nil || len(pdf) != 1 || pdf[0].Loc != (index.Locator{Unit: index.Unrecorded, Start: 3}) {
		t.Fatalf("old PDF chunk: %+v, %v", pdf, err)
	}
	md, err := x.Chunks(ctx, "a.md")
	if err != nil || len(md) != 1 {
		t.Fatalf("old Markdown chunks: %+v, %v", md, err)
	}
	if c, err := x.Chunk(ctx, md[0].ID); err != nil || c.Loc != (index.Locator{Unit: index.Unrecorded}) || c.Heading != "A" {
		t.Fatalf("old Markdown chunk: %+v, %v", c, err)
	}
	loc := index.Locator{Unit: index.Page, Start: 3, End: 4}
	if err := x.Put(ctx, index.Doc{Path: "paper.pdf", Hash: "h1"}, []index.Chunk{{Text: "words from page three", Loc: loc}}); err != nil {
		t.Fatal(err)
	}
	if hits, err := x.Lexical(ctx, "three", 3); err != nil || len(hits) != 1 || hits[0].Loc != loc {
		t.Fatalf("chunk put again: %+v, %v", hits, err)
	}
}

// vocabulary has common and rare words, Porter variants of one stem,
// accents, case and digits.
var vocabulary = strings.Fields(`the of and to in is for on that with cloud costs cost budget
connect connected connecting connection connections Connective generalization generalize general
café Café CAFE naïve naive résumé Resume RESUMES Straße strasse ÉLAN élan Ærø øre ĳzer
hop hopping hopped hopper happy happiness relational rational conditional 2024 v2 x86 42
latency timeout Latency TIMEOUTS throughput cache caching cached index indexes indices indexing
zebra quokka axolotl ptarmigan narwhal`)

// corpus puts the same generated documents into every index, replacing
// and deleting some on the way as a vault does.
func corpus(t testing.TB, n int, xs ...index.Index) {
	t.Helper()
	r := mrand.New(mrand.NewPCG(42, 1))
	word := func() string {
		i := int(math.Floor(math.Pow(r.Float64(), 2.5) * float64(len(vocabulary)-5)))
		if r.IntN(500) == 0 {
			i = len(vocabulary) - 1 - r.IntN(5)
		}
		return vocabulary[i]
	}
	seps := []string{" ", " ", " ", ", ", ". ", "\n", " - ", "'s ", "/"}
	for d := 0; d < n/8; d++ {
		cs := make([]index.Chunk, 1+r.IntN(15))
		for i := range cs {
			var b strings.Builder
			for w := range r.IntN(120) {
				if w > 0 {
					b.WriteString(seps[r.IntN(len(seps))])
				}
				b.WriteString(word())
			}
			cs[i] = index.Chunk{Text: b.String(), Heading: fmt.Sprintf("Doc %d > %s", d, word())}
		}
		path := fmt.Sprintf("d%04d.md", d%(n/10))
		del := ""
		if d%37 == 0 {
			del = fmt.Sprintf("d%04d.md", r.IntN(n/10))
		}
		for _, x := range xs {
			if err := x.Put(t.Context(), index.Doc{Path: path, Hash: "h"}, cs); err != nil {
				t.Fatal(err)
			}
			if del != "" {
				if err := x.Delete(t.Context(), del); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestRanksAsSQLite: the same hits in the same order as the sqliteindex
// (scores within 1e-9, as the Lexicon's test allows FTS5) and as the
// Lexicon (scores equal to the bit), also after a rebuild.
func TestRanksAsSQLite(t *testing.T) {
	ctx := t.Context()
	n := 1000
	if testing.Short() {
		n = 400
	}
	pg := pgindex.New(pgtest.DB(t, pgindex.Migrate), pgtest.VaultID())
	sq, err := sqliteindex.Open(ctx, filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	corpus(t, n, pg, sq)
	compare := func(what string) {
		lx, err := index.LoadLexicon(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		queries := []string{"cloud", "the", "the of and", "zebra", "quokka narwhal", "cloud cloud", "the the the cost",
			"submarine", "submarine cloud", "CLOUD", "Cafe", "CAFÉ", "cafés", "naïve", "résumés", "Straße", "ÆRØ",
			"connecting connected", "2024", "x86", "Doc", "doc 12", "latency-timeout", `"cache" OR index`, "NEAR(cache index)",
			"the cloud costs of the budget with connected caching and indexes", "caf\xe9 \x00 cloud"}
		r := mrand.New(mrand.NewPCG(9, 9))
		for range 30 {
			var ws []string
			for range 1 + r.IntN(6) {
				ws = append(ws, vocabulary[r.IntN(len(vocabulary))])
			}
			queries = append(queries, strings.Join(ws, " "))
		}
		for _, q := range queries {
			for _, lim := range []int{1, 10, 1 << 20} {
				got, err := pg.Lexical(ctx, q, lim)
				if err != nil {
					t.Fatal(err)
				}
				want, err := sq.Lexical(ctx, q, lim)
				if err != nil {
					t.Fatal(err)
				}
				mem := lx.Search(q, lim)
				if len(got) != len(want) || len(got) != len(mem) {
					t.Errorf("%s: %q n=%d: %d hits, SQLite %d, Lexicon %d", what, q, lim, len(got), len(want), len(mem))
					continue
				}
				for i := range got {
					g, w, m := got[i], want[i], mem[i]
					if g.Doc != w.Doc || g.Index != w.Index || g.Text != w.Text || g.Rank != w.Rank || math.Abs(g.Score-w.Score) > 1e-9*math.Abs(w.Score) {
						t.Errorf("%s: %q n=%d hit %d: %s#%d rank %d score %v; SQLite %s#%d rank %d score %v", what, q, lim, i, g.Doc, g.Index, g.Rank, g.Score, w.Doc, w.Index, w.Rank, w.Score)
						break
					}
					if g.ID != m.ID || g.Score != m.Score || g.Rank != m.Rank {
						t.Errorf("%s: %q n=%d hit %d: id %d score %v; Lexicon id %d score %v", what, q, lim, i, g.ID, g.Score, m.ID, m.Score)
						break
					}
				}
			}
		}
	}
	compare("indexed")

	// Rebuild both from their own documents in reverse order.
	for _, x := range []index.Index{pg, sq} {
		docs, err := x.Docs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byDoc, err := chunksByDoc(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		b, err := x.Rebuild(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range slices.Backward(docs) {
			if err := b.Put(ctx, d, byDoc[d.Path]); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	compare("rebuilt")
}

// chunksByDoc reads every chunk of x, by document, in order.
func chunksByDoc(ctx context.Context, x index.Index) (map[string][]index.Chunk, error) {
	out := map[string][]index.Chunk{}
	err := x.EachText(ctx, func(id int64, _, _ string) error {
		c, err := x.Chunk(ctx, id)
		out[c.Doc] = append(out[c.Doc], c)
		return err
	})
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b index.Chunk) int { return a.Index - b.Index })
	}
	return out, err
}
