package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
		for _, para := range pageParagraphs(p.Content().Text) {
			doc.Blocks = append(doc.Blocks, Block{Kind: Paragraph, Text: para, Page: i + 1})
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
