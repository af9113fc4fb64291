package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/extract/extracttest"
)

// render writes a document's blocks one per line: "h2 Text", "p Text" or
// "p@3 Text" for a paragraph at position 3 (page, paragraph or line), with
// line breaks shown as \n.
func render(doc *Document) string {
	var b strings.Builder
	for _, bl := range doc.Blocks {
		if bl.Kind == Heading {
			fmt.Fprintf(&b, "h%d", bl.Level)
		} else {
			b.WriteString("p")
		}
		if bl.Pos > 0 {
			fmt.Fprintf(&b, "@%d", bl.Pos)
		}
		fmt.Fprintf(&b, " %s\n", strings.ReplaceAll(bl.Text, "\n", `\n`))
	}
	return b.String()
}

func TestExtract(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		path   string
		data   []byte
		format Format
		unit   Unit
		title  string
		want   string
	}{
		{"markdown", "notes.md", []byte("---\ntitle: x\n---\n# Top\n\nIntro  text.\n\n## Sub\none\ntwo\n\n\nthree\n```\n# not a heading\n```\n"),
			Markdown, Lines, "Top", "p@1 ---\\ntitle: x\\n---\nh1@4 Top\np@6 Intro  text.\nh2@8 Sub\np@9 one\\ntwo\np@13 three\\n```\\n# not a heading\\n```\n"},
		{"markdown before heading", "a.markdown", []byte("lead\n\n# H\nbody"), Markdown, Lines, "H", "p@1 lead\nh1@3 H\np@4 body\n"},
		{"markdown heading repeated in body", "r.md", []byte("# Bar\n\n\nBar\n\n# Empty\n# Baz\n\u00e9\u00e9\n\n  Baz\n"), Markdown, Lines, "Bar",
			"h1@1 Bar\np@4 Bar\nh1@6 Empty\nh1@7 Baz\np@8 \u00e9\u00e9\np@10 Baz\n"},
		{"text", "a.txt", []byte("\xef\xbb\xbfone\r\ntwo\r\n\r\nthree\xff"), Text, Lines, "", "p@1 one\\ntwo\np@4 three\uFFFD\n"},
		{"text lone CRs and blank runs", "b.txt", []byte("\n\n  a\rb\r\r \n\n\tc  \n"), Text, Lines, "", "p@3 a\\nb\np@8 c\n"},
		{"empty text", "a.txt", nil, Text, Lines, "", ""},
		{"json", "a.json", []byte(`{"a": 1}`), JSON, Lines, "", "p@1 {\"a\": 1}\n"},
		{"minified json", "m.json", []byte(`{"k":"` + strings.Repeat("v", 1000) + `","n":[1,2]}`), JSON, "", "",
			"p {\\n  \"k\": \"" + strings.Repeat("v", 1000) + "\",\\n  \"n\": [\\n    1,\\n    2\\n  ]\\n}\n"},
		{"csv", "A.CSV", []byte("a,b\n1,2\n"), CSV, Lines, "", "p@1 a,b\\n1,2\n"},
		{"html", "page.html", []byte(`<!doctype html><html><head><title> The  Page </title><style>p{}</style><script>var x;</script></head>
<body><nav>Home</nav><h1>Main <em>title</em></h1><p>First   para<br>next line</p><div hidden>secret</div>
<p aria-hidden="true">gone</p><h3>Deep</h3><ul><li>one</li><li>two <b>bold</b></li></ul><table><tr><td>a</td><td>b</td></tr></table>
<pre>  code
  kept</pre><noscript>no</noscript><template>tpl</template>tail &amp; end</body></html>`),
			HTML, "", "The Page", "p Home\nh1 Main title\np First para\\nnext line\nh3 Deep\np one\np two bold\np a b\np code\\n  kept\np tail & end\n"},
		{"htm", "x.htm", []byte("plain"), HTML, "", "", "p plain\n"},
		{"pdf", "report.pdf", extracttest.MakePDF("Report", [][]string{{"Page one line one", "line two", "", "Second paragraph"}, {"Page (two)"}}),
			PDF, Pages, "Report", "p@1 Page one line one\\nline two\np@1 Second paragraph\np@2 Page (two)\n"},
		{"docx", "doc.docx", extracttest.MakeDOCX(t, "Meta title", map[string]string{"Heading1": "heading 1", "Titolo2": "Heading 2", "T": "Title"}, []extracttest.DOCXPara{
			para("T", "Doc ", "title"),
			para("Heading1", "Intro"),
			para("", "Hello ", "world", "\t", "tab", "\n", "break"),
			para("Titolo2", "Local", "ised"),
			para("", "  "),
			para("Other", "Body & more"),
		}), DOCX, Paragraphs, "Meta title", "h1@1 Doc title\nh1@2 Intro\np@3 Hello world\ttab\\nbreak\nh2@4 Localised\np@5 Body & more\n"},
		{"docx title style", "d.docx", extracttest.MakeDOCX(t, "", map[string]string{"Title": "Title"}, []extracttest.DOCXPara{para("Title", "Named")}),
			DOCX, Paragraphs, "Named", "h1@1 Named\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Extract(ctx, tt.path, bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || doc.Unit != tt.unit || doc.Title != tt.title {
				t.Errorf("format, unit, title = %s, %q, %q; want %s, %q, %q", doc.Format, doc.Unit, doc.Title, tt.format, tt.unit, tt.title)
			}
			if got := render(doc); got != tt.want {
				t.Errorf("blocks:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestExtractErrors(t *testing.T) {
	ctx := context.Background()
	bomb := func() []byte { // a DOCX whose document.xml expands to 2 MiB
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.Create("word/document.xml")
		_, _ = w.Write(bytes.Repeat([]byte(" "), 2<<20))
		_ = zw.Close()
		return b.Bytes()
	}()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		opts   Options
		path   string
		data   []byte
		target error  // checked with errors.Is when set
		prefix string // the error's start
	}{
		{"unsupported", ctx, Options{}, "photo.png", nil, ErrUnsupported, "extract photo.png: "},
		{"no extension", ctx, Options{}, "README", nil, ErrUnsupported, "extract README: "},
		{"too large", ctx, Options{MaxBytes: 4}, "a.txt", []byte("12345"), ErrTooLarge, "extract a.txt: over 4 bytes"},
		{"docx expands too far", ctx, Options{MaxBytes: 1 << 20}, "b.docx", bomb, ErrTooLarge, "extract b.docx: "},
		{"not a pdf", ctx, Options{}, "report.pdf", []byte("hello"), nil, "extract report.pdf: open pdf: "},
		{"truncated pdf", ctx, Options{}, "t.pdf", extracttest.MakePDF("x", [][]string{{"a"}})[:200], nil, "extract t.pdf: "},
		// The PDF library loops for ever on these; Extract must refuse them.
		{"pdf unterminated hex string", ctx, Options{}, "h.pdf", extracttest.MakePDFStreams("t", []string{"BT (a\\) Tj) Tj <4"}), nil, "extract h.pdf: malformed pdf: page 1: content stream ends inside a hex string"},
		{"pdf hex after a bad token", ctx, Options{}, "h.pdf", extracttest.MakePDFStreams("t", []string{"<< < << <\x04"}), nil, "extract h.pdf: malformed pdf: page 1: content stream"},
		{"pdf cyclic page tree", ctx, Options{}, "c.pdf", bytes.Replace(extracttest.MakePDF("t", [][]string{{"a"}}), []byte("/Kids [4 0 R]"), []byte("/Kids [2 0 R]"), 1), nil, "extract c.pdf: malformed pdf: page tree"},
		{"not a docx", ctx, Options{}, "d.docx", []byte("PK nope"), nil, "extract d.docx: open docx: "},
		{"docx without body", ctx, Options{}, "d.docx", func() []byte {
			var b bytes.Buffer
			zw := zip.NewWriter(&b)
			_ = zw.Close()
			return b.Bytes()
		}(), nil, "extract d.docx: open docx: no word/document.xml"},
		{"cancelled", cancelled, Options{}, "a.md", []byte("x"), context.Canceled, "extract a.md: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := tt.opts.Extract(tt.ctx, tt.path, bytes.NewReader(tt.data))
			if err == nil {
				t.Fatalf("got %v, want an error", render(doc))
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
			if !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Errorf("error %q does not start with %q", err, tt.prefix)
			}
		})
	}
}

func TestSupported(t *testing.T) {
	for path, want := range map[string]bool{"a.md": true, "b.PDF": true, "c.docx": true, "d.doc": false, "e": false, "f.htm": true} {
		if Supported(path) != want {
			t.Errorf("Supported(%q) = %v", path, !want)
		}
	}
}

// corpus returns the path of a document in ../shared/corpus/research-vault,
// skipping the test when it is absent.
func corpus(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "corpus", "research-vault", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("corpus document %s absent (%v): real-document test skipped", name, err)
	}
	return p
}

func extractFile(t *testing.T, path string) *Document {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Extract(context.Background(), path, f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCorpusPDF(t *testing.T) {
	doc := extractFile(t, corpus(t, "rag_survey_paper.pdf"))
	pages := map[int]string{}
	for _, b := range doc.Blocks {
		pages[b.Pos] += b.Text + "\n"
	}
	if len(pages) != 4 {
		t.Fatalf("text on pages %v, want 1 to 4", len(pages))
	}
	for page, want := range map[int][]string{
		1: {"Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks", "1. INTRODUCTION", "Patrick Lewis, Ethan Perez"},
		2: {"2.1 Models", "Maximum Inner Product Search (MIPS)"},
		3: {"3.2 Results", "(44.5% exact match)"},
		4: {"5. CONCLUSION", "[5] K. Guu et al. REALM"},
	} {
		for _, w := range want {
			if !strings.Contains(pages[page], w) {
				t.Errorf("page %d lacks %q:\n%s", page, w, pages[page])
			}
		}
	}
	if doc.Blocks[0].Text != "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks" {
		t.Errorf("first block %q", doc.Blocks[0].Text)
	}
}

func TestCorpusDOCX(t *testing.T) {
	doc := extractFile(t, corpus(t, "rag_comparison.docx"))
	if len(doc.Blocks) < 50 {
		t.Fatalf("%d blocks, want one per paragraph (over 50)", len(doc.Blocks))
	}
	if doc.Blocks[0].Text != "RAG vs Fine-Tuning vs Prompting: A Comparison" {
		t.Errorf("first paragraph %q", doc.Blocks[0].Text)
	}
	for _, w := range []string{"How it works:", "Store documents in vector database"} {
		if !slices.ContainsFunc(doc.Blocks, func(b Block) bool { return b.Kind == Paragraph && b.Text == w }) {
			t.Errorf("no paragraph %q", w)
		}
	}
}

func TestCorpusMarkdownAndText(t *testing.T) {
	md := extractFile(t, corpus(t, "personal_notes.md"))
	if md.Title != "My Notes on Retrieval-Augmented Generation (RAG)" || md.Blocks[1].Kind != Heading || md.Blocks[1].Text != "Overview" {
		t.Errorf("markdown: title %q, blocks %s", md.Title, render(md))
	}
	txt := extractFile(t, corpus(t, "blog_article.txt"))
	if len(txt.Blocks) < 5 || txt.Format != Text {
		t.Errorf("text: %d blocks, format %s", len(txt.Blocks), txt.Format)
	}
}

// fuzzExtract checks that Extract never panics and that a document it
// returns has well-formed blocks.
func fuzzExtract(t *testing.T, path string, data []byte) {
	doc, err := Options{MaxBytes: 1 << 20}.ExtractBytes(context.Background(), path, data)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "extract "+path+": ") {
			t.Fatalf("error without the path: %v", err)
		}
		return
	}
	for _, b := range doc.Blocks {
		if strings.TrimSpace(b.Text) != b.Text || b.Text == "" {
			t.Fatalf("block text %q not trimmed or empty", b.Text)
		}
		if (b.Kind == Heading) != (b.Level > 0) {
			t.Fatalf("block %+v: kind and level disagree", b)
		}
	}
	checkPositions(t, doc, data)
}

// checkPositions checks the blocks' positions against the file, read
// here on its own: pages from 1 and never going back, DOCX paragraphs
// numbered 1, 2, 3..., and for lines, each line of a block's text on the
// file's line its position names.
func checkPositions(t *testing.T, doc *Document, data []byte) {
	t.Helper()
	lines := strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))), "\n")
	last := 0
	for i, b := range doc.Blocks {
		switch doc.Unit {
		case "":
			if b.Pos != 0 {
				t.Fatalf("block %d at %d in a document without positions", i, b.Pos)
			}
		case Pages:
			if b.Pos < max(last, 1) {
				t.Fatalf("block %d on page %d after page %d", i, b.Pos, last)
			}
		case Paragraphs:
			if b.Pos != i+1 {
				t.Fatalf("block %d is paragraph %d", i, b.Pos)
			}
		case Lines:
			if b.Pos <= last {
				t.Fatalf("block %d on line %d, after a block on line %d", i, b.Pos, last)
			}
			for k, l := range strings.Split(b.Text, "\n") {
				n := b.Pos + k
				if n > len(lines) {
					t.Fatalf("block %d line %d is line %d of a file of %d", i, k, n, len(lines))
				}
				src, l := strings.ToValidUTF8(lines[n-1], "\uFFFD"), strings.TrimSpace(l)
				if b.Kind == Heading {
					src, l = collapse(src), collapse(l)
				}
				if !strings.Contains(src, l) {
					t.Fatalf("block %d line %d %q is not on line %d: %q", i, k, l, n, src)
				}
			}
		default:
			t.Fatalf("unit %q", doc.Unit)
		}
		last = b.Pos
	}
}

func FuzzPDF(f *testing.F) {
	f.Add(extracttest.MakePDF("T", [][]string{{"hello world", "", "again"}, {"two"}}))
	f.Add([]byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.pdf", data) })
}

// FuzzPDFContent fuzzes the content stream of a well-formed PDF, which
// the mutations of FuzzPDF rarely reach (they break the cross-references).
func FuzzPDFContent(f *testing.F) {
	f.Add("BT /F1 12 Tf 72 760 Td (hello) Tj 0 -14 Td [(wor) -200 (ld)] TJ ET")
	f.Add("BT /F1 0 Tf 1 0 0 -1 0 0 Tm (x) ' (y) \" T* ET q Q cm")
	f.Add("BT /F2 12 Tf <48656c6c6f> Tj ET")
	f.Fuzz(func(t *testing.T, content string) {
		fuzzExtract(t, "c.pdf", extracttest.MakePDFStreams("t", []string{content}))
	})
}

func FuzzDOCX(f *testing.F) {
	f.Add(extracttest.MakeDOCX(f, "T", map[string]string{"H1": "heading 1"}, []extracttest.DOCXPara{para("H1", "Head"), para("", "a", "\t", "b")}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.docx", data) })
}

func FuzzHTML(f *testing.F) {
	f.Add([]byte("<html><head><title>t</title></head><body><h2>x</h2><p>a<br>b</p><script>s</script></body></html>"))
	f.Add([]byte("<pre>a\n b</pre><h7>no</h7><table><td>c"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.html", data) })
}

func FuzzText(f *testing.F) {
	f.Add([]byte("\xef\xbb\xbfone\r\ntwo\r\n\r\n  three\r\rfour\n \n"))
	f.Add([]byte("\n\n\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.txt", data) })
}

func FuzzMarkdown(f *testing.F) {
	f.Add([]byte("---\ntitle: x\n---\n# Bar\n\nBar\n# Empty\n#  Baz  #\n\u00e9\r\n\r\n  Baz\n"))
	f.Add([]byte("# a\n\nb\n\n## c\n```\n# d\n\n```\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.md", data) })
}

// para is a paragraph of a generated DOCX.
func para(style string, runs ...string) extracttest.DOCXPara {
	return extracttest.DOCXPara{Style: style, Runs: runs}
}
