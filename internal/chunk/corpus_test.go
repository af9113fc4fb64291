package chunk

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/ctxkit/ctxkit/internal/extract"
)

// corpusDir is ../shared/corpus/research-vault from the repository root.
var corpusDir = filepath.Join("..", "..", "..", "shared", "corpus", "research-vault")

// TestCorpus chunks the real documents in ../shared/corpus/research-vault
// (skipped when absent) and checks the properties, and that PDF chunks keep
// their pages.
func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus absent (%v): real-document test skipped", err)
	}
	for _, name := range []string{"rag_survey_paper.pdf", "rag_comparison.docx", "personal_notes.md", "blog_article.txt"} {
		t.Run(name, func(t *testing.T) {
			doc, _ := extractFile(t, filepath.Join(corpusDir, name))
			opts := Options{Words: 120, Overlap: 20}
			chunks := Split(doc, opts)
			if len(chunks) == 0 {
				t.Fatal("no chunks")
			}
			checkProperties(t, doc, opts, chunks)
			if doc.Format == extract.PDF {
				pages := map[int]bool{}
				for _, c := range chunks {
					pages[c.Loc.Start] = true
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

// TestCorpusLocators checks, for every chunk of the real documents (with
// the vault's default options, and with small chunks that cross more
// boundaries), that its text is where its locator says, reading the file
// again independently of the chunker: a PDF's pages from pdftotext
// (poppler-utils) when installed, else from the extractor page by page; a
// DOCX's paragraphs from word/document.xml read here; the lines of text and
// Markdown from the file itself.
func TestCorpusLocators(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("corpus absent (%v): real-document test skipped", err)
	}
	for _, name := range []string{"rag_survey_paper.pdf", "rag_comparison.docx", "personal_notes.md", "blog_article.txt"} {
		path := filepath.Join(corpusDir, name)
		doc, data := extractFile(t, path)
		var check func(t *testing.T, c Chunk)
		switch doc.Format {
		case extract.PDF:
			check = pageChecker(t, path, doc)
		case extract.DOCX:
			check = runChecker(docxWords(t, data))
		default:
			check = runChecker(lineWords(string(data)))
		}
		for _, opts := range []Options{{}, {Words: 60, Overlap: 10}} {
			t.Run(fmt.Sprintf("%s/%d", name, opts.Words), func(t *testing.T) {
				spanning := 0
				for _, c := range Split(doc, opts) {
					if c.Loc.Unit != doc.Unit || c.Loc.Start < 1 || c.Loc.End < c.Loc.Start {
						t.Fatalf("chunk %d: locator %+v in a document of %q", c.Index, c.Loc, doc.Unit)
					}
					if c.Loc.End > c.Loc.Start {
						spanning++
					}
					check(t, c)
				}
				if spanning == 0 {
					t.Errorf("no chunk spans two %ss: the test shows nothing about ranges", doc.Unit)
				}
			})
		}
	}
}

func extractFile(t *testing.T, path string) (*extract.Document, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := extract.ExtractBytes(context.Background(), filepath.Base(path), data)
	if err != nil {
		t.Fatal(err)
	}
	return doc, data
}

// posWord is a word of a file and its position there (line or paragraph).
type posWord struct {
	text string
	pos  int
}

// lineWords returns the words of a text file with their lines, numbered
// as an editor does.
func lineWords(text string) []posWord {
	text = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(strings.TrimPrefix(text, "\ufeff"))
	var out []posWord
	for i, line := range strings.Split(text, "\n") {
		for _, w := range strings.Fields(line) {
			out = append(out, posWord{w, i + 1})
		}
	}
	return out
}

// docxWords returns the words of a DOCX with their paragraph numbers,
// counting the body's paragraphs (w:p, table cells' included) that have
// text, read from word/document.xml.
func docxWords(t *testing.T, data []byte) []posWord {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out   []posWord
		para  strings.Builder
		depth int
		inT   bool
		n     int
	)
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "p":
				depth++
			case "t":
				inT = true
			case "tab", "br", "cr":
				para.WriteByte(' ')
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "t":
				inT = false
			case "p":
				if depth--; depth > 0 {
					para.WriteByte(' ')
					continue
				}
				if words := strings.Fields(para.String()); len(words) > 0 {
					n++
					for _, w := range words {
						out = append(out, posWord{w, n})
					}
				}
				para.Reset()
			}
		case xml.CharData:
			if inT {
				para.Write(tok)
			}
		}
	}
}

// runChecker returns a check that a chunk's body is a run of the file's
// words that starts at the locator's start and ends at its end; a chunk of
// a heading alone must have its heading at the start.
func runChecker(words []posWord) func(t *testing.T, c Chunk) {
	return func(t *testing.T, c Chunk) {
		t.Helper()
		body := strings.Fields(c.Body())
		if len(body) == 0 {
			names := strings.Split(c.HeadingPath, " > ")
			want := strings.Fields(names[len(names)-1])
			for k, w := range words {
				if w.pos == c.Loc.Start && k+len(want) <= len(words) && sameWords(words[k:k+len(want)], want) {
					return
				}
			}
			t.Errorf("chunk %d: heading %q is not at %s %d", c.Index, c.HeadingPath, c.Loc.Unit, c.Loc.Start)
			return
		}
		for k, w := range words {
			if w.pos != c.Loc.Start || k+len(body) > len(words) {
				continue
			}
			if run := words[k : k+len(body)]; sameWords(run, body) && run[len(run)-1].pos == c.Loc.End {
				return
			}
		}
		t.Errorf("chunk %d: its text does not run from %s %d to %s %d of the file:\n%s", c.Index, c.Loc.Unit, c.Loc.Start, c.Loc.Unit, c.Loc.End, c.Text)
	}
}

func sameWords(run []posWord, words []string) bool {
	for i, w := range run {
		if w.text != words[i] {
			return false
		}
	}
	return true
}

// pageChecker returns a check that a chunk's first words are on its first
// page and its last words on its last, and that its whole text is on the
// pages from the first to the last (compared without white space, which
// PDF readers place differently), reading the pages with pdftotext when it
// is installed, else with the extractor one page at a time.
func pageChecker(t *testing.T, path string, doc *extract.Document) func(t *testing.T, c Chunk) {
	t.Helper()
	var pages []string
	if bin, err := exec.LookPath("pdftotext"); err == nil {
		out, err := exec.Command(bin, "-enc", "UTF-8", path, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext: %v", err)
		}
		pages = strings.Split(string(out), "\f")
	} else {
		t.Logf("pdftotext not installed (poppler-utils): pages read with the extractor instead")
		for _, b := range doc.Blocks {
			for len(pages) < b.Pos {
				pages = append(pages, "")
			}
			pages[b.Pos-1] += b.Text + "\n"
		}
	}
	for i := range pages {
		pages[i] = squeeze(pages[i])
	}
	return func(t *testing.T, c Chunk) {
		t.Helper()
		body := strings.Fields(c.Body())
		k := min(len(body), 5)
		head, tail := squeeze(strings.Join(body[:k], "")), squeeze(strings.Join(body[len(body)-k:], ""))
		if c.Loc.End > len(pages) {
			t.Fatalf("chunk %d: pages %d-%d of a PDF of %d", c.Index, c.Loc.Start, c.Loc.End, len(pages))
		}
		if !strings.Contains(pages[c.Loc.Start-1], head) {
			t.Errorf("chunk %d: its first words %q are not on its first page %d", c.Index, body[:k], c.Loc.Start)
		}
		if !strings.Contains(pages[c.Loc.End-1], tail) {
			t.Errorf("chunk %d: its last words %q are not on its last page %d", c.Index, body[len(body)-k:], c.Loc.End)
		}
		span := strings.Join(pages[c.Loc.Start-1:c.Loc.End], "")
		for _, w := range body {
			at := strings.Index(span, squeeze(w))
			if at < 0 {
				t.Errorf("chunk %d: word %q is not on pages %d-%d in order", c.Index, w, c.Loc.Start, c.Loc.End)
				return
			}
			span = span[at+len(squeeze(w)):]
		}
	}
}

// squeeze drops white space.
func squeeze(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), "")
}
