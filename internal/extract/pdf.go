package extract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// extractPDF reads the text of each page, rebuilt into lines and
// paragraphs from the positions of its characters, as paragraphs carrying
// the page number. The PDF library panics on some malformed input; that is
// turned into an error here.
func extractPDF(ctx context.Context, doc *Document, data []byte) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("malformed pdf: %v", x)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("open pdf: %w", err)
	}
	if info := r.Trailer().Key("Info"); info.Kind() == pdf.Dict {
		doc.Title = collapse(info.Key("Title").Text())
	}
	pages, err := pdfPages(r)
	if err != nil {
		return err
	}
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := checkContent(p.V.Key("Contents")); err != nil {
			return fmt.Errorf("malformed pdf: page %d: %w", i+1, err)
		}
		for _, para := range pageParagraphs(p.Content().Text) {
			doc.Blocks = append(doc.Blocks, Block{Kind: Paragraph, Text: para, Pos: i + 1})
		}
	}
	return nil
}

// maxTreeDepth bounds the depth of a PDF's page tree, and of a page's
// chain of parents, which real files keep shallow.
const maxTreeDepth = 64

// pdfPages returns the pages of r in order. It walks the page tree itself,
// rather than with the library's Reader.Page, so that a malformed tree (a
// cycle of Kids or of Parent links, which makes Reader.Page and the
// library's lookup of inherited resources loop for ever) is an error: the
// walk visits at most a bounded number of nodes, keeps at most Count
// pages, and refuses a page whose chain of parents is too long.
func pdfPages(r *pdf.Reader) ([]pdf.Page, error) {
	root := r.Trailer().Key("Root").Key("Pages")
	count := int(min(max(root.Key("Count").Int64(), 0), 1<<20))
	budget := 4*count + 1024 // nodes the walk may visit
	var pages []pdf.Page
	var walk func(node pdf.Value, depth int) error
	walk = func(node pdf.Value, depth int) error {
		if budget--; budget < 0 || depth > maxTreeDepth {
			return errors.New("malformed pdf: page tree too large or cyclic")
		}
		switch node.Key("Type").Name() {
		case "Pages":
			kids := node.Key("Kids")
			for i := 0; i < kids.Len() && len(pages) < count; i++ {
				if err := walk(kids.Index(i), depth+1); err != nil {
					return err
				}
			}
		case "Page":
			p := node
			for range maxTreeDepth {
				if p = p.Key("Parent"); p.IsNull() {
					break
				}
			}
			if !p.IsNull() {
				return errors.New("malformed pdf: page parents too deep or cyclic")
			}
			pages = append(pages, pdf.Page{V: node})
		}
		return nil
	}
	err := walk(root, 0)
	return pages, err
}

// checkContent reads a page's content streams (one stream or an array of
// them, as Page.Content reads them) and fails when they end inside a hex
// string: the library's tokenizer loops for ever there, since at the end
// of a content stream it reads an endless run of newlines. Comments,
// literal strings (with escapes and nested parentheses) and dictionary
// brackets are skipped as the tokenizer skips them, and after a malformed
// token the scan goes on where the tokenizer goes on (it recovers from its
// parse errors and reads on from there).
func checkContent(strm pdf.Value) error {
	var rd io.Reader
	switch strm.Kind() {
	case pdf.Null:
		return nil
	case pdf.Array:
		readers := make([]io.Reader, 0, strm.Len())
		for i := 0; i < strm.Len(); i++ {
			readers = append(readers, strm.Index(i).Reader())
		}
		rd = io.MultiReader(readers...)
	default:
		rd = strm.Reader()
	}
	br := bufio.NewReader(rd)
	for {
		c, err := br.ReadByte()
		if err != nil {
			return nil
		}
		switch c {
		case '%': // a comment, to the end of the line
			for c != '\r' && c != '\n' && err == nil {
				c, err = br.ReadByte()
			}
		case '(':
			scanLiteral(br)
		case '<':
			if next, err := br.Peek(1); err == nil && next[0] == '<' {
				_, _ = br.ReadByte() // a dictionary
				continue
			}
			if scanHex(br) == hexEOF {
				return errors.New("content stream ends inside a hex string")
			}
		}
	}
}

// scanLiteral reads a literal string after its '(' as the library's
// tokenizer does: to the matching ')', or up to an invalid escape, where
// the tokenizer fails and reads on after it.
func scanLiteral(br *bufio.Reader) {
	for depth := 1; depth > 0; {
		c, err := br.ReadByte()
		if err != nil {
			return
		}
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case '\\':
			c, err := br.ReadByte()
			if err != nil {
				return
			}
			switch {
			case strings.IndexByte("nrbtf()\\\r\n", c) >= 0:
			case '0' <= c && c <= '7':
				x := int(c - '0')
				for range 2 {
					d, err := br.ReadByte()
					if err != nil {
						return
					}
					if d < '0' || d > '7' {
						_ = br.UnreadByte()
						break
					}
					x = x*8 + int(d-'0')
				}
				if x > 255 {
					return
				}
			default:
				return
			}
		}
	}
}

// The ends of scanHex.
const (
	hexClosed = iota // by '>'
	hexEOF           // the input ended first
	hexBad           // a pair of characters is not hex
)

// scanHex reads a hex string after its '<' as the library's tokenizer
// does: pairs of characters, white space skipped, until '>' where a pair
// would start.
func scanHex(br *bufio.Reader) int {
	next := func() (byte, bool) {
		for {
			c, err := br.ReadByte()
			if err != nil {
				return 0, false
			}
			if !isPDFSpace(c) {
				return c, true
			}
		}
	}
	for {
		c, ok := next()
		if !ok {
			return hexEOF
		}
		if c == '>' {
			return hexClosed
		}
		c2, ok := next()
		if !ok {
			return hexEOF
		}
		if !isHex(c) || !isHex(c2) {
			return hexBad
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isPDFSpace reports whether c is white space in PDF syntax.
func isPDFSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

// pageParagraphs rebuilds the text of a page from its characters, in the
// order of the content stream: a character whose baseline is more than half
// a font size away from the line's starts a new line, and a line whose
// baseline is below the previous one by more than 1.6 line heights (or
// above it, as in a new column) starts a new paragraph. Within a line, a
// gap wider than a fifth of the font size after a character's end, and
// more than a font size after its start (fonts without widths give
// characters no width), is a space.
func pageParagraphs(chars []pdf.Text) []string {
	var (
		paras []string
		para  strings.Builder // the current paragraph
		line  strings.Builder // the current line
		// the line's baseline and font size, the previous line's baseline,
		// the end of the last character on the line
		lineY, lineSize, prevY, lastX, lastEnd float64
		haveLine, havePrev                     bool
	)
	endLine := func() {
		t := strings.TrimSpace(line.String())
		line.Reset()
		if t == "" {
			return
		}
		if havePrev {
			gap := prevY - lineY
			if gap < 0 || gap > 1.6*1.2*lineSize {
				if p := strings.TrimSpace(para.String()); p != "" {
					paras = append(paras, p)
				}
				para.Reset()
			} else {
				para.WriteByte('\n')
			}
		}
		para.WriteString(t)
		prevY, havePrev = lineY, true
	}
	for _, c := range chars {
		if c.S == "" || math.IsNaN(c.X) || math.IsNaN(c.Y) {
			continue
		}
		size := math.Abs(c.FontSize)
		if size == 0 || math.IsNaN(size) || math.IsInf(size, 0) {
			size = 10
		}
		if !haveLine || math.Abs(c.Y-lineY) > size/2 {
			if haveLine {
				endLine()
			}
			lineY, lineSize, haveLine = c.Y, size, true
		} else if c.X-lastEnd > size/5 && c.X-lastX > size && !strings.HasSuffix(line.String(), " ") && c.S != " " {
			line.WriteByte(' ')
		}
		if size > lineSize {
			lineSize = size
		}
		line.WriteString(c.S)
		lastX, lastEnd = c.X, c.X+c.W
	}
	endLine()
	if p := strings.TrimSpace(para.String()); p != "" {
		paras = append(paras, p)
	}
	return paras
}
