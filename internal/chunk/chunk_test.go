package chunk

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/extract"
	"github.com/ctxkit/ctxkit/internal/extract/extracttest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// md extracts a Markdown document.
func md(t testing.TB, text string) *extract.Document {
	t.Helper()
	doc, err := extract.Extract(context.Background(), "doc.md", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// words returns n generated words, w0 w1 ..., with a full stop after every
// tenth and a line break after every 25th.
func words(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			if i%25 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		fmt.Fprintf(&b, "%s%d", prefix, i)
		if i%10 == 9 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// render shows chunks for golden files: the page of the first word, as
// these goldens were written before chunks had a locator (see
// TestLocatorGolden for the locators).
func render(chunks []Chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		page := 0
		if c.Loc.Unit == extract.Pages {
			page = c.Loc.Start
		}
		fmt.Fprintf(&b, "--- chunk %d: path %q, page %d, blocks %d-%d, %d words\n%s\n", c.Index, c.HeadingPath, page, c.FirstBlock, c.LastBlock, c.Words, c.Text)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	pages := &extract.Document{Format: extract.PDF, Unit: extract.Pages, Blocks: []extract.Block{
		{Text: words("a", 30), Pos: 1},
		{Text: words("b", 40), Pos: 1},
		{Text: words("c", 50), Pos: 2},
		{Text: "last page", Pos: 3},
	}}
	docs := []struct {
		name string
		doc  *extract.Document
		opts Options
	}{
		{"markdown", md(t, "Preface text.\n\n# Guide\n\nIntro.\n\n## Install\n\n"+words("w", 70)+"\n\n"+words("x", 20)+"\n\n## Empty\n\n### Deep\n\nDeep text.\n\n# Last heading alone\n"), Options{Words: 50, Overlap: 5}},
		{"plain", &extract.Document{Format: extract.Text, Blocks: []extract.Block{{Text: words("p", 120)}, {Text: "Short one."}, {Text: words("q", 30)}}}, Options{Words: 60, Overlap: 10}},
		{"pages", pages, Options{Words: 45, Overlap: -1}},
		{"defaults", md(t, "# Long\n\n"+words("d", 1000)), Options{}},
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			got := render(Split(d.doc, d.opts))
			path := filepath.Join("testdata", d.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("chunks differ from %s (run with -update to see):\n%s", path, got)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		doc  *extract.Document
		opts Options
		want []string // Text of each chunk
	}{
		{"nil", nil, Options{}, nil},
		{"empty", &extract.Document{}, Options{}, nil},
		{"headings nest", md(t, "# A\n\na\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd\n\n# E\n\ne"), Options{},
			[]string{"A\n\na", "A > B\n\nb", "A > B > C\n\nc", "A > D\n\nd", "E\n\ne"}},
		{"heading alone at end", md(t, "# A\n\n## B\n"), Options{}, []string{"A > B"}},
		{"paragraph before line", &extract.Document{Blocks: []extract.Block{{Text: "one two\nthree"}, {Text: "four five six"}}}, Options{Words: 4, Overlap: -1},
			[]string{"one two\nthree", "four five six"}},
		{"line before sentence", &extract.Document{Blocks: []extract.Block{{Text: "one. two\nthree four five"}}}, Options{Words: 4, Overlap: -1},
			[]string{"one. two", "three four five"}},
		{"sentence before space", &extract.Document{Blocks: []extract.Block{{Text: "one two. three four five"}}}, Options{Words: 4, Overlap: -1},
			[]string{"one two.", "three four five"}},
		{"overlap", &extract.Document{Blocks: []extract.Block{{Text: "a b c d e f g h"}}}, Options{Words: 4, Overlap: 2},
			[]string{"a b c d", "c d e f", "e f g h"}},
		{"overlap clamped", &extract.Document{Blocks: []extract.Block{{Text: "a b c d e f"}}}, Options{Words: 4, Overlap: 9},
			[]string{"a b c d", "c d e f"}},
		{"oversize word", &extract.Document{Blocks: []extract.Block{{Text: "a " + strings.Repeat("x", 50) + " b"}}}, Options{Words: 1, Overlap: -1},
			[]string{"a", strings.Repeat("x", 50), "b"}},
		{"kept formatting", &extract.Document{Blocks: []extract.Block{{Text: "func f() {\n\treturn 1\n}"}}}, Options{},
			[]string{"func f() {\n\treturn 1\n}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Split(tt.doc, tt.opts)
			var got []string
			for _, c := range chunks {
				got = append(got, c.Text)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if tt.doc != nil {
				checkProperties(t, tt.doc, tt.opts, chunks)
			}
		})
	}
}

// TestLocator: a chunk is located from its first word to its last, in
// the document's unit; within a block of lines, by the line breaks before
// the word.
func TestLocator(t *testing.T) {
	pdf := &extract.Document{Unit: extract.Pages, Blocks: []extract.Block{{Text: "a b c", Pos: 1}, {Text: "d e f", Pos: 2}, {Text: "g", Pos: 4}}}
	docx := &extract.Document{Unit: extract.Paragraphs, Blocks: []extract.Block{
		{Kind: extract.Heading, Level: 1, Text: "H", Pos: 1}, {Text: "a b", Pos: 2}, {Text: "c d e", Pos: 3},
		{Kind: extract.Heading, Level: 1, Text: "Alone", Pos: 4}}}
	html := &extract.Document{Blocks: []extract.Block{{Text: "a b c d e"}}}
	tests := []struct {
		name string
		doc  *extract.Document
		opts Options
		want string // each chunk's locator
	}{
		{"pages", pdf, Options{Words: 4, Overlap: 1}, "[{page 1 1} {page 1 2} {page 2 4}]"}, // "a b c", "c d e f", "f g"
		{"one page each", pdf, Options{Words: 3, Overlap: -1}, "[{page 1 1} {page 2 2} {page 4 4}]"},
		{"paragraphs and a heading alone", docx, Options{Words: 3, Overlap: -1}, "[{paragraph 2 2} {paragraph 3 3} {paragraph 4 4}]"},
		{"paragraphs joined", docx, Options{}, "[{paragraph 2 3} {paragraph 4 4}]"},
		{"lines in blocks", md(t, "# T\n\none two\nthree\n\n\nfour\n  five six\n"), Options{Words: 2, Overlap: -1},
			"[{line 3 3} {line 4 4} {line 7 7} {line 8 8}]"}, // "one two", "three", "four", "five six"
		{"lines across blank lines", md(t, "one\n\n\ntwo three\nfour"), Options{Words: 3, Overlap: -1}, "[{line 1 4} {line 5 5}]"},
		{"overlap starts on an earlier line", md(t, "a\nb\nc\nd"), Options{Words: 2, Overlap: 1}, "[{line 1 2} {line 2 3} {line 3 4}]"},
		{"no positions", html, Options{Words: 3, Overlap: -1}, "[{ 0 0} { 0 0}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Locator
			for _, c := range Split(tt.doc, tt.opts) {
				got = append(got, c.Loc)
			}
			if fmt.Sprint(got) != tt.want {
				t.Errorf("locators %v, want %s", got, tt.want)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	doc := md(t, "# T\n\n"+words("z", 2000))
	a, b := render(Split(doc, Options{Words: 77, Overlap: 13})), render(Split(doc, Options{Words: 77, Overlap: 13}))
	if a != b {
		t.Error("two runs differ")
	}
}

// TestProperties checks the properties on random documents.
func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		doc := randomDoc(r)
		opts := Options{Words: 1 + r.IntN(60), Overlap: r.IntN(30) - 5}
		checkProperties(t, doc, opts, Split(doc, opts))
	}
}

func randomDoc(r *rand.Rand) *extract.Document {
	doc := &extract.Document{Unit: extract.Pages}
	vocab := []string{"alpha", "beta.", "gamma", "delta!", "x", "longerword", "é", "中文"}
	seps := []string{" ", " ", " ", "\n", "\n\n", "  \t"}
	for i := range r.IntN(12) {
		if r.IntN(4) == 0 {
			doc.Blocks = append(doc.Blocks, extract.Block{Kind: extract.Heading, Level: 1 + r.IntN(3), Text: fmt.Sprintf("H%d", i)})
			continue
		}
		var b strings.Builder
		for j := range r.IntN(150) + 1 {
			if j > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			b.WriteString(vocab[r.IntN(len(vocab))])
		}
		doc.Blocks = append(doc.Blocks, extract.Block{Text: b.String(), Pos: i/3 + 1})
	}
	return doc
}

// checkProperties asserts: every word of every block is in some chunk (a
// heading's in some chunk's heading path), in order; no body holds more
// than the limit; consecutive chunks of one section repeat the configured
// overlap exactly; indices count from 0.
func checkProperties(t *testing.T, doc *extract.Document, opts Options, chunks []Chunk) {
	t.Helper()
	limit, overlap := opts.norm()
	// The words of each block, with where each was covered.
	var bodyWords []string
	for _, b := range doc.Blocks {
		if b.Kind == extract.Heading {
			found := false
			for _, c := range chunks {
				if strings.Contains(c.HeadingPath, b.Text) {
					found = true
				}
			}
			if !found {
				t.Fatalf("heading %q in no chunk's path", b.Text)
			}
			continue
		}
		bodyWords = append(bodyWords, strings.Fields(b.Text)...)
	}
	next := 0 // the next body word to find
	for i, c := range chunks {
		if c.Index != i {
			t.Fatalf("chunk %d has index %d", i, c.Index)
		}
		body := strings.Fields(c.Body())
		if c.HeadingPath != "" && !strings.HasPrefix(c.Text, c.HeadingPath) {
			t.Fatalf("chunk %d does not start with its path %q", i, c.HeadingPath)
		}
		if len(body) != c.Words {
			t.Fatalf("chunk %d: Words %d, body has %d", i, c.Words, len(body))
		}
		if len(body) > limit {
			t.Fatalf("chunk %d has %d words, limit %d", i, len(body), limit)
		}
		if c.Words == 0 {
			continue
		}
		// A chunk starts with new words, or with the overlap of the one
		// before it in the same section.
		if i > 0 && overlap > 0 && sameSection(doc, chunks[i-1], c) {
			prev := strings.Fields(chunks[i-1].Body())
			if strings.Join(prev[len(prev)-overlap:], " ") != strings.Join(body[:overlap], " ") {
				t.Fatalf("chunk %d does not repeat the last %d words of chunk %d:\n%q\n%q", i, overlap, i-1, prev, body)
			}
			body = body[overlap:]
		}
		for _, w := range body {
			if next >= len(bodyWords) || bodyWords[next] != w {
				t.Fatalf("chunk %d: word %q out of order (want word %d of %d)", i, w, next, len(bodyWords))
			}
			next++
		}
	}
	if next != len(bodyWords) {
		t.Fatalf("%d of %d words in chunks", next, len(bodyWords))
	}
}

// sameSection reports whether b continues a's section: a has words and no
// heading stands between them.
func sameSection(doc *extract.Document, a, b Chunk) bool {
	if a.Words == 0 || a.HeadingPath != b.HeadingPath {
		return false
	}
	for i := a.LastBlock + 1; i < b.FirstBlock; i++ {
		if doc.Blocks[i].Kind == extract.Heading {
			return false
		}
	}
	return true
}

func FuzzSplit(f *testing.F) {
	f.Add("# A\n\none two. three\n\n## B\nfour\n", 3, 1)
	f.Add("plain words only", 1, 0)
	f.Fuzz(func(t *testing.T, text string, words, overlap int) {
		doc, err := extract.Options{}.ExtractBytes(context.Background(), "f.md", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Words: words % 500, Overlap: overlap % 300}
		chunks := Split(doc, opts)
		checkProperties(t, doc, opts, chunks)
		checkLines(t, text, chunks)
	})
}

// checkLines checks each chunk's line range against the text: its first
// word (or its heading's last word) is on its first line, its last word on
// its last line.
func checkLines(t *testing.T, text string, chunks []Chunk) {
	t.Helper()
	lines := map[int][]string{}
	for _, w := range lineWords(strings.ToValidUTF8(text, "\uFFFD")) {
		lines[w.pos] = append(lines[w.pos], w.text)
	}
	for _, c := range chunks {
		first, last := "", ""
		if body := strings.Fields(c.Body()); len(body) > 0 {
			first, last = body[0], body[len(body)-1]
		} else {
			h := strings.Fields(c.HeadingPath)
			first, last = h[len(h)-1], h[len(h)-1]
		}
		if c.Loc.Unit != extract.Lines || c.Loc.Start > c.Loc.End ||
			!slices.Contains(lines[c.Loc.Start], first) || !slices.Contains(lines[c.Loc.End], last) {
			t.Fatalf("chunk %d at %+v: %q not on the first line or %q not on the last, in %q", c.Index, c.Loc, first, last, text)
		}
	}
}

// locatorDocs writes the generated documents of TestLocatorGolden: a PDF
// of three pages, a DOCX with headings, a text file and a Markdown file,
// each cut by Options{Words: 30, Overlap: 5} into chunks that cross pages,
// paragraphs and lines.
func locatorDocs(t *testing.T) map[string][]byte {
	lines := func(prefix string, n, per int) []string {
		var out []string
		for i := 0; i < n; i += per {
			out = append(out, strings.Join(strings.Fields(words(prefix, n))[i:min(i+per, n)], " "))
		}
		return out
	}
	page1 := append(lines("a", 24, 8), append([]string{""}, lines("b", 16, 8)...)...)
	page2 := lines("c", 40, 8)
	page3 := append([]string{"Closing words."}, lines("d", 12, 6)...)
	return map[string][]byte{
		"report.pdf": extracttest.MakePDF("Report", [][]string{page1, page2, page3}),
		"report.docx": extracttest.MakeDOCX(t, "Report", map[string]string{"Heading1": "heading 1", "Heading2": "heading 2"}, []extracttest.DOCXPara{
			{Style: "Heading1", Runs: []string{"Report"}},
			{Runs: []string{words("p", 12)}},
			{Runs: []string{words("q", 20)}},
			{Runs: []string{" "}}, // no text: not counted
			{Runs: []string{words("r", 15), "\n", "after a break"}},
			{Style: "Heading2", Runs: []string{"Alone"}},
			{Style: "Heading1", Runs: []string{"End"}},
			{Runs: []string{"Last", "\t", "paragraph."}},
		}),
		"notes.txt": []byte("Title line\r\n\r\n" + strings.ReplaceAll(words("t", 60), "\n", "\r\n") + "\r\n\r\n\r\nshort tail\r\n"),
		"notes.md":  []byte("---\ntags: [x]\n---\n# Notes\n\n" + words("m", 45) + "\n\n## Sub\n\n```\ncode " + words("k", 8) + "\n```\n\n## Empty\n\n# Two\n\n- " + words("l", 20) + "\n- last item\n"),
	}
}

// TestLocatorGolden chunks the committed generated documents in
// testdata/locators (written by locatorDocs with -update) and compares
// each chunk's locator with testdata/locators.golden.
func TestLocatorGolden(t *testing.T) {
	dir := filepath.Join("testdata", "locators")
	docs := locatorDocs(t)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range docs {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		doc, err := extract.ExtractBytes(context.Background(), name, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range Split(doc, Options{Words: 30, Overlap: 5}) {
			fmt.Fprintf(&b, "--- %s chunk %d: path %q, %s %d-%d\n%s\n", name, c.Index, c.HeadingPath, c.Loc.Unit, c.Loc.Start, c.Loc.End, c.Body())
		}
	}
	path := filepath.Join("testdata", "locators.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if b.String() != string(want) {
		t.Errorf("locators differ from %s (run with -update to see):\n%s", path, b.String())
	}
}
