// Package extract turns the files of a semantic vault into text blocks for
// chunking and indexing: headings with their level and paragraphs, each
// with its position in the original file, in the unit the format has
// ([Document.Unit]): the page of a PDF, the paragraph of a DOCX, the line
// of a file read as text (Markdown, plain text, CSV, JSON). HTML has none:
// its parser gives no source positions and a browser shows no lines or
// pages, so a passage of HTML is found by its heading path alone.
//
// The format is chosen by the file's extension: Markdown (.md, .markdown)
// keeps its ATX headings; plain text (.txt), JSON (.json) and CSV (.csv)
// are read as text, in paragraphs split at blank lines (minified JSON, with
// lines over 1,000 bytes, is indented first so that it can be chunked); PDF (.pdf) keeps
// one or more paragraphs per page with the page number; DOCX (.docx) keeps
// its paragraphs, and paragraphs in heading styles become headings; HTML
// (.html, .htm) keeps its visible text and headings, dropping scripts,
// styles and hidden elements.
//
// Every parser here reads untrusted input: a malformed file returns an
// error and never panics, and input is bounded by [Options.MaxBytes] (64 MiB
// by default), including what a DOCX decompresses to.
//
// Libraries: HTML uses golang.org/x/net/html. DOCX is read by hand with
// archive/zip and encoding/xml: the part of the format needed here (the
// paragraphs of word/document.xml and the heading styles of
// word/styles.xml) is small, and the Go DOCX libraries are either paid,
// unmaintained or far larger than this. PDF uses github.com/ledongthuc/pdf,
// a pure-Go reader (a maintained fork of rsc.io/pdf) that decodes content
// streams and font encodings into positioned characters; lines and
// paragraphs are rebuilt here from those positions. Its limits: no OCR
// (scanned pages have no text), no encrypted files other than those with an
// empty password, reading order is the order of the content stream (right
// for ordinary single-column documents, not always for multi-column
// layouts), and PDF headings are not recognised (they come out as
// paragraphs). The library turns most malformed input into panics, which
// are recovered here as errors; the inputs on which it was found to loop
// for ever (a cyclic page tree, a content stream ending inside a hex
// string) are checked for before it reads them, and FuzzPDF and
// FuzzPDFContent look for more.
package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format names a document format.
type Format string

// The formats Extract reads.
const (
	Markdown Format = "markdown"
	Text     Format = "text"
	JSON     Format = "json"
	CSV      Format = "csv"
	PDF      Format = "pdf"
	DOCX     Format = "docx"
	HTML     Format = "html"
)

// DefaultMaxBytes is the default limit on the size of one file, and on what
// a compressed format (DOCX) expands to.
const DefaultMaxBytes = 64 << 20

// ErrUnsupported is returned for a file whose extension no parser reads.
var ErrUnsupported = errors.New("unsupported file type")

// ErrTooLarge is returned for a file over the size limit.
var ErrTooLarge = errors.New("file too large")

// Kind is what a block is.
type Kind int

// The kinds of block.
const (
	// Paragraph is body text: a paragraph, list item, table cell or page
	// fragment. Its text may hold line breaks.
	Paragraph Kind = iota
	// Heading starts a section; Block.Level gives its depth.
	Heading
)

// Unit is what a block's position counts.
type Unit string

// The units of positions. A document of a format without positions has
// the empty Unit and every block's Pos is 0.
const (
	// Pages: Pos is the 1-based page of a PDF.
	Pages Unit = "page"
	// Paragraphs: Pos is the 1-based number of a DOCX paragraph among the
	// document's paragraphs that have text, in document order, headings
	// and table cells included (a paragraph with no text is not counted).
	Paragraphs Unit = "paragraph"
	// Lines: Pos is the 1-based line of the file the block starts on, as
	// an editor numbers them (a CRLF, LF or lone CR ends a line), and the
	// block's text keeps the file's line breaks, so its n-th line is line
	// Pos+n-1 of the file.
	Lines Unit = "line"
)

// String returns "paragraph" or "heading".
func (k Kind) String() string {
	if k == Heading {
		return "heading"
	}
	return "paragraph"
}

// Block is one unit of a document's text, in reading order.
type Block struct {
	Kind Kind
	// Level is a heading's level, 1 for the top; 0 for a paragraph.
	Level int
	// Text is the block's text, trimmed of surrounding whitespace and never
	// empty.
	Text string
	// Pos is the block's position in the original file, in its
	// document's Unit (where its text starts); 0 when the format has none.
	Pos int
}

// Document is the text of one file.
type Document struct {
	Format Format
	// Title is the document's title where it has one: Markdown's first
	// level-1 heading, HTML's <title>, the DOCX or PDF metadata title, or a
	// DOCX paragraph in the Title style. Empty otherwise.
	Title string
	// Unit is what the blocks' Pos counts; empty when the format (HTML,
	// JSON re-indented to be chunked) gives no positions.
	Unit   Unit
	Blocks []Block
}

// Options configures extraction. The zero value is ready to use.
type Options struct {
	// MaxBytes limits the size of a file and of what it decompresses to;
	// 0 means DefaultMaxBytes.
	MaxBytes int64
}

// Supported reports whether Extract reads files with path's extension.
func Supported(path string) bool {
	_, ok := formatOf(path)
	return ok
}

func formatOf(path string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown":
		return Markdown, true
	case ".txt":
		return Text, true
	case ".json":
		return JSON, true
	case ".csv":
		return CSV, true
	case ".pdf":
		return PDF, true
	case ".docx":
		return DOCX, true
	case ".html", ".htm":
		return HTML, true
	}
	return "", false
}

// Extract reads a document from r with the default options; path names it
// (its extension chooses the format) and appears in errors.
func Extract(ctx context.Context, path string, r io.Reader) (*Document, error) {
	return Options{}.Extract(ctx, path, r)
}

// Extract reads a document from r; see the package function Extract.
func (o Options) Extract(ctx context.Context, path string, r io.Reader) (*Document, error) {
	if _, ok := formatOf(path); !ok {
		return nil, fmt.Errorf("extract %s: %w", path, ErrUnsupported)
	}
	data, err := io.ReadAll(io.LimitReader(r, o.maxBytes()+1))
	if err != nil {
		return nil, fmt.Errorf("extract %s: read: %w", path, err)
	}
	return o.ExtractBytes(ctx, path, data)
}

// ExtractBytes reads a document already in memory with the default
// options; see Extract.
func ExtractBytes(ctx context.Context, path string, data []byte) (*Document, error) {
	return Options{}.ExtractBytes(ctx, path, data)
}

// ExtractBytes is Extract for a file already in memory.
func (o Options) ExtractBytes(ctx context.Context, path string, data []byte) (doc *Document, err error) {
	format, ok := formatOf(path)
	if !ok {
		return nil, fmt.Errorf("extract %s: %w", path, ErrUnsupported)
	}
	if int64(len(data)) > o.maxBytes() {
		return nil, fmt.Errorf("extract %s: over %d bytes: %w", path, o.maxBytes(), ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract %s: %w", path, err)
	}
	doc = &Document{Format: format, Unit: Lines}
	switch format {
	case Markdown:
		extractMarkdown(doc, textOf(data))
	case JSON:
		text, line := indentJSON(data), 1
		if !bytes.Equal(text, data) { // re-indented: its lines are not the file's
			doc.Unit, line = "", 0
		}
		doc.Blocks = paragraphs(nil, textOf(text), line)
	case Text, CSV:
		doc.Blocks = paragraphs(nil, textOf(data), 1)
	case HTML:
		doc.Unit = ""
		err = extractHTML(doc, data)
	case DOCX:
		doc.Unit = Paragraphs
		err = extractDOCX(ctx, doc, data, o.maxBytes())
	case PDF:
		doc.Unit = Pages
		err = extractPDF(ctx, doc, data)
	}
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", path, err)
	}
	return doc, nil
}

func (o Options) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

// longLine is the length from which a JSON line counts as minified.
const longLine = 1000

// indentJSON returns valid JSON with a line over longLine bytes indented,
// one value per line, so that minified JSON has lines and spaces for the
// chunker to cut at; other JSON (and invalid JSON) is returned as it is.
func indentJSON(data []byte) []byte {
	long := false
	for line := range bytes.Lines(data) {
		if len(line) > longLine {
			long = true
			break
		}
	}
	if !long || !json.Valid(data) {
		return data
	}
	var b bytes.Buffer
	if json.Indent(&b, data, "", "  ") != nil {
		return data
	}
	return b.Bytes()
}

// textOf returns data as valid UTF-8 text without a byte order mark and
// with CRLF line ends as LF.
func textOf(data []byte) string {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	s := string(data)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.Contains(s, "\r") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	return s
}

// paragraphs appends to blocks the paragraphs of text, split at blank
// lines. Text starts on line line of its file, and each block's Pos is the
// line it starts on; a line of 0 (lines unknown) gives every block Pos 0.
func paragraphs(blocks []Block, text string, line int) []Block {
	for len(text) > 0 {
		para, rest := nextParagraph(text)
		p := strings.TrimLeftFunc(para, unicode.IsSpace)
		pos := 0
		if line > 0 {
			pos = line + strings.Count(para[:len(para)-len(p)], "\n")
			line += strings.Count(text[:len(text)-len(rest)], "\n")
		}
		if p = strings.TrimRightFunc(p, unicode.IsSpace); p != "" {
			blocks = append(blocks, Block{Kind: Paragraph, Text: p, Pos: pos})
		}
		text = rest
	}
	return blocks
}

// nextParagraph returns text up to its first blank line, and the rest.
func nextParagraph(text string) (para, rest string) {
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		lineEnd := i + j + 1
		k := lineEnd
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if k < len(text) && text[k] == '\n' {
			return text[:i+j], text[k+1:]
		}
		i = lineEnd
	}
	return text, ""
}
