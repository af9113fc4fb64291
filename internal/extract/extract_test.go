package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// render writes a document's blocks one per line: "h2 Text", "p Text" or
// "p@3 Text" for a paragraph on page 3, with line breaks shown as \n.
func render(doc *Document) string {
	var b strings.Builder
	for _, bl := range doc.Blocks {
		if bl.Kind == Heading {
			fmt.Fprintf(&b, "h%d", bl.Level)
		} else {
			b.WriteString("p")
		}
		if bl.Page > 0 {
			fmt.Fprintf(&b, "@%d", bl.Page)
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
		title  string
		want   string
	}{
		{"markdown", "notes.md", []byte("---\ntitle: x\n---\n# Top\n\nIntro  text.\n\n## Sub\none\ntwo\n\n\nthree\n```\n# not a heading\n```\n"),
			Markdown, "Top", "p ---\\ntitle: x\\n---\nh1 Top\np Intro  text.\nh2 Sub\np one\\ntwo\np three\\n```\\n# not a heading\\n```\n"},
		{"markdown before heading", "a.markdown", []byte("lead\n\n# H\nbody"), Markdown, "H", "p lead\nh1 H\np body\n"},
		{"text", "a.txt", []byte("\xef\xbb\xbfone\r\ntwo\r\n\r\nthree\xff"), Text, "", "p one\\ntwo\np three\uFFFD\n"},
		{"empty text", "a.txt", nil, Text, "", ""},
		{"json", "a.json", []byte(`{"a": 1}`), JSON, "", "p {\"a\": 1}\n"},
		{"minified json", "m.json", []byte(`{"k":"` + strings.Repeat("v", 1000) + `","n":[1,2]}`), JSON, "",
			"p {\\n  \"k\": \"" + strings.Repeat("v", 1000) + "\",\\n  \"n\": [\\n    1,\\n    2\\n  ]\\n}\n"},
		{"csv", "A.CSV", []byte("a,b\n1,2\n"), CSV, "", "p a,b\\n1,2\n"},
		{"html", "page.html", []byte(`<!doctype html><html><head><title> The  Page </title><style>p{}</style><script>var x;</script></head>
<body><nav>Home</nav><h1>Main <em>title</em></h1><p>First   para<br>next line</p><div hidden>secret</div>
<p aria-hidden="true">gone</p><h3>Deep</h3><ul><li>one</li><li>two <b>bold</b></li></ul><table><tr><td>a</td><td>b</td></tr></table>
<pre>  code
  kept</pre><noscript>no</noscript><template>tpl</template>tail &amp; end</body></html>`),
			HTML, "The Page", "p Home\nh1 Main title\np First para\\nnext line\nh3 Deep\np one\np two bold\np a b\np code\\n  kept\np tail & end\n"},
		{"htm", "x.htm", []byte("plain"), HTML, "", "p plain\n"},
		{"pdf", "report.pdf", makePDF("Report", [][]string{{"Page one line one", "line two", "", "Second paragraph"}, {"Page (two)"}}),
			PDF, "Report", "p@1 Page one line one\\nline two\np@1 Second paragraph\np@2 Page (two)\n"},
		{"docx", "doc.docx", makeDOCX(t, "Meta title", map[string]string{"Heading1": "heading 1", "Titolo2": "Heading 2", "T": "Title"}, []docxPara{
			{"T", []string{"Doc ", "title"}},
			{"Heading1", []string{"Intro"}},
			{"", []string{"Hello ", "world", "\t", "tab", "\n", "break"}},
			{"Titolo2", []string{"Local", "ised"}},
			{"", []string{"  "}},
			{"Other", []string{"Body & more"}},
		}), DOCX, "Meta title", "h1 Doc title\nh1 Intro\np Hello world\ttab\\nbreak\nh2 Localised\np Body & more\n"},
		{"docx title style", "d.docx", makeDOCX(t, "", map[string]string{"Title": "Title"}, []docxPara{{"Title", []string{"Named"}}}),
			DOCX, "Named", "h1 Named\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Extract(ctx, tt.path, bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tt.format || doc.Title != tt.title {
				t.Errorf("format, title = %s, %q; want %s, %q", doc.Format, doc.Title, tt.format, tt.title)
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
		{"truncated pdf", ctx, Options{}, "t.pdf", makePDF("x", [][]string{{"a"}})[:200], nil, "extract t.pdf: "},
		// The PDF library loops for ever on these; Extract must refuse them.
		{"pdf unterminated hex string", ctx, Options{}, "h.pdf", makePDFStreams("t", []string{"BT (a\\) Tj) Tj <4"}), nil, "extract h.pdf: malformed pdf: page 1: content stream ends inside a hex string"},
		{"pdf hex after a bad token", ctx, Options{}, "h.pdf", makePDFStreams("t", []string{"<< < << <\x04"}), nil, "extract h.pdf: malformed pdf: page 1: content stream"},
		{"pdf cyclic page tree", ctx, Options{}, "c.pdf", bytes.Replace(makePDF("t", [][]string{{"a"}}), []byte("/Kids [4 0 R]"), []byte("/Kids [2 0 R]"), 1), nil, "extract c.pdf: malformed pdf: page tree"},
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
		pages[b.Page] += b.Text + "\n"
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
	text := render(doc)
	for _, w := range []string{"p How it works:\n", "p Store documents in vector database\n"} {
		if !strings.Contains(text, w) {
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
}

func FuzzPDF(f *testing.F) {
	f.Add(makePDF("T", [][]string{{"hello world", "", "again"}, {"two"}}))
	f.Add([]byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.pdf", data) })
}

// FuzzPDFContent fuzzes the content stream of a well-formed PDF, which
// the mutations of FuzzPDF rarely reach (they break the cross-references).
func FuzzPDFContent(f *testing.F) {
	f.Add("BT /F1 12 Tf 72 760 Td (hello) Tj 0 -14 Td [(wor) -200 (ld)] TJ ET")
	f.Add("BT /F1 0 Tf 1 0 0 -1 0 0 Tm (x) ' (y) \" T* ET q Q cm")
	f.Add("BT /F2 12 Tf <48656c6c6f> Tj ET")
	f.Fuzz(func(t *testing.T, content string) { fuzzExtract(t, "c.pdf", makePDFStreams("t", []string{content})) })
}

func FuzzDOCX(f *testing.F) {
	f.Add(makeDOCX(f, "T", map[string]string{"H1": "heading 1"}, []docxPara{{"H1", []string{"Head"}}, {"", []string{"a", "\t", "b"}}}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.docx", data) })
}

func FuzzHTML(f *testing.F) {
	f.Add([]byte("<html><head><title>t</title></head><body><h2>x</h2><p>a<br>b</p><script>s</script></body></html>"))
	f.Add([]byte("<pre>a\n b</pre><h7>no</h7><table><td>c"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.html", data) })
}

func FuzzMarkdown(f *testing.F) {
	f.Add([]byte("# a\n\nb\n\n## c\n```\n# d\n\n```\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzExtract(t, "f.md", data) })
}
