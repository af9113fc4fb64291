package index_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// lexVocabulary has common and rare words, Porter variants of one stem,
// accents, case and digits.
var lexVocabulary = strings.Fields(`the of and to in is for on that with cloud costs cost budget
connect connected connecting connection connections Connective generalization generalize general
café Café CAFE naïve naive résumé Resume RESUMES Straße strasse ÉLAN élan Ærø øre ĳzer
hop hopping hopped hopper happy happiness relational rational conditional 2024 v2 x86 42
latency timeout Latency TIMEOUTS throughput cache caching cached index indexes indices indexing
zebra quokka axolotl ptarmigan narwhal`)

// lexCorpus writes about n chunks of generated text into a new index,
// replacing and deleting some documents on the way as a vault does.
func lexCorpus(t testing.TB, n int) *sqliteindex.Index {
	t.Helper()
	x, err := sqliteindex.Open(t.Context(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	r := rand.New(rand.NewPCG(42, 1))
	// Zipf-like: low indexes are much more common; the last few words
	// are rare.
	word := func() string {
		i := int(math.Floor(math.Pow(r.Float64(), 2.5) * float64(len(lexVocabulary)-5)))
		if r.IntN(500) == 0 {
			i = len(lexVocabulary) - 1 - r.IntN(5)
		}
		return lexVocabulary[i]
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
		if err := x.Put(t.Context(), index.Doc{Path: path, Hash: "h"}, cs); err != nil {
			t.Fatal(err)
		}
		if d%37 == 0 {
			if err := x.Delete(t.Context(), fmt.Sprintf("d%04d.md", r.IntN(n/10))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return x
}

// lexQueries are single, common, rare, repeated, absent, cased and
// accented words, and mixes of them.
func lexQueries() []string {
	qs := []string{"cloud", "the", "the of and", "zebra", "quokka narwhal", "cloud cloud", "the the the cost",
		"submarine", "submarine cloud", "CLOUD", "Cafe", "CAFÉ", "cafés", "naïve", "NAIVE", "resume", "résumés",
		"strasse", "STRASSE", "Straße", "élan", "ÆRØ", "connections", "connecting connected", "generalizations",
		"happiness happy", "relational rational conditional", "2024", "v2", "x86", "42", "Doc", "Part", "doc 12",
		"latency-timeout", "timeout:latency", `"cache" OR index`, "NEAR(cache index)", "index*", "indices indexing",
		"the cloud costs of the budget with connected caching and indexes", "hop hopping hopped hopper",
		"nai\u0308ve CAFE\u0301", "x² ½", "alphaᦰcloud"}
	r := rand.New(rand.NewPCG(9, 9))
	for range scaled(80, 20) {
		var ws []string
		for range 1 + r.IntN(6) {
			ws = append(ws, lexVocabulary[r.IntN(len(lexVocabulary))])
		}
		qs = append(qs, strings.Join(ws, " "))
	}
	return qs
}

// TestLexiconMatchesFTS5 is the Lexicon's conformance test: the same hits
// as the sqliteindex, in the same order, with the same scores (equal to
// the bit in practice; the test allows 1e-9 relative).
func TestLexiconMatchesFTS5(t *testing.T) {
	x := lexCorpus(t, scaled(2000, 500))
	lx, err := index.LoadLexicon(t.Context(), x)
	if err != nil {
		t.Fatal(err)
	}
	if lx.Len() < scaled(1000, 250) {
		t.Fatalf("only %d chunks", lx.Len())
	}
	for _, q := range lexQueries() {
		// FTS5 orders every match totally (rank, rowid), so the top n
		// are the first n of all.
		all, err := x.Lexical(t.Context(), q, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 10, 50, 1 << 30} {
			want := all[:min(n, len(all))]
			got := lx.Search(q, n)
			if len(got) != len(want) {
				t.Errorf("%q n=%d: %d hits, FTS5 %d", q, n, len(got), len(want))
				continue
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Rank != w.Rank || math.Abs(g.Score-w.Score) > 1e-9*math.Abs(w.Score) {
					t.Errorf("%q n=%d hit %d: id %d rank %d score %v; FTS5 id %d rank %d score %v", q, n, i, g.ID, g.Rank, g.Score, w.ID, w.Rank, w.Score)
					break
				}
			}
		}
	}
}

func TestLexiconEdges(t *testing.T) {
	lx, err := index.NewLexicon(t.Context(), []index.TextRow{{ID: 9, Text: "alpha beta"}, {ID: 3, Text: "beta", Heading: "Alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		n     int
		want  []int64
	}{
		{"alpha", 10, []int64{3, 9}}, // equal scores: by id
		{"alpha", 1, []int64{3}},
		{"", 10, nil},
		{"  ,; ", 10, nil},
		{"gamma", 10, nil},
		{"alpha", 0, nil},
		{"ᦰ beta", 10, []int64{3, 9}},     // a separator to unicode61 is no word
		{"alphaᦰbeta", 10, []int64{3, 9}}, // two words, as to FTS5
	} {
		got := lx.Search(tc.query, tc.n)
		var ids []int64
		for _, h := range got {
			ids = append(ids, h.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
			t.Errorf("%q n=%d: %v, want %v", tc.query, tc.n, ids, tc.want)
		}
	}
	if _, err := index.NewLexicon(t.Context(), []index.TextRow{{ID: 1}, {ID: 1}}); err == nil {
		t.Error("a repeated id was accepted")
	}
	if _, err := index.NewLexicon(t.Context(), []index.TextRow{{ID: 1, Text: "ok"}, {ID: 2, Heading: "caf\xe9"}}); !errors.Is(err, index.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v, want ErrInvalidUTF8", err)
	}
	empty, err := index.NewLexicon(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hits := empty.Search("alpha", 5); len(hits) != 0 {
		t.Errorf("empty lexicon: %v", hits)
	}
}

// scaled is n, or small under the race detector.
func scaled(n, small int) int {
	if underRace {
		return small
	}
	return n
}
