package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The WordprocessingML namespace of DOCX's XML parts.
const wordNS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

// extractDOCX reads the paragraphs of word/document.xml in order (table
// cells included, one paragraph each), numbered from 1 among those with
// text (a text box's paragraphs are part of the paragraph holding it). A
// paragraph whose style is a heading ("heading N" by name, or with an
// outline level) becomes a heading of that level; one in the Title style
// gives the title.
func extractDOCX(ctx context.Context, doc *Document, data []byte, limit int64) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("open docx: %w", err)
	}
	var body, styles, core *zip.File
	for _, f := range zr.File {
		switch f.Name {
		case "word/document.xml":
			body = f
		case "word/styles.xml":
			styles = f
		case "docProps/core.xml":
			core = f
		}
	}
	if body == nil {
		return errors.New("open docx: no word/document.xml")
	}
	budget := limit // decompressed bytes left for all parts
	levels := map[string]int{}
	if styles != nil {
		if levels, err = docxStyles(styles, &budget); err != nil {
			return err
		}
	}
	if core != nil {
		doc.Title = docxTitle(core, &budget)
	}
	return docxBody(ctx, doc, body, levels, &budget)
}

// openPart opens a zip member, reading at most *budget bytes of it.
func openPart(f *zip.File, budget *int64) (io.ReadCloser, *budgetReader, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", f.Name, err)
	}
	return rc, &budgetReader{r: rc, left: budget}, nil
}

// budgetReader reads until the shared budget runs out, then fails with
// ErrTooLarge, so that a small DOCX cannot expand without bound.
type budgetReader struct {
	r    io.Reader
	left *int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		return 0, fmt.Errorf("decompressed parts: %w", ErrTooLarge)
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}

// titleStyle is the level docxStyles gives the Title style.
const titleStyle = -1

// docxStyles maps paragraph style ids to heading levels, from the style's
// name ("heading 1" ... "heading 9", "Title") or its outline level, so that
// styles with localised ids ("Titolo1") are recognised too.
func docxStyles(f *zip.File, budget *int64) (map[string]int, error) {
	rc, r, err := openPart(f, budget)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	levels := map[string]int{}
	d := xml.NewDecoder(r)
	var id string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return levels, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Space != wordNS {
			continue
		}
		switch se.Name.Local {
		case "style":
			id = attr(se, "styleId")
		case "name":
			name := strings.ToLower(attr(se, "val"))
			if name == "title" {
				levels[id] = titleStyle
			} else if n, ok := strings.CutPrefix(name, "heading "); ok {
				if l, err := strconv.Atoi(n); err == nil && l >= 1 && l <= 9 {
					levels[id] = l
				}
			}
		case "outlineLvl":
			if l, err := strconv.Atoi(attr(se, "val")); err == nil && l >= 0 && l < 9 && levels[id] == 0 {
				levels[id] = l + 1
			}
		}
	}
}

// docxTitle returns dc:title from docProps/core.xml, or "".
func docxTitle(f *zip.File, budget *int64) string {
	rc, r, err := openPart(f, budget)
	if err != nil {
		return ""
	}
	defer rc.Close()
	var core struct {
		Title string `xml:"title"`
	}
	if xml.NewDecoder(r).Decode(&core) != nil {
		return ""
	}
	return collapse(core.Title)
}

// docxBody appends the paragraphs of word/document.xml to doc.
func docxBody(ctx context.Context, doc *Document, f *zip.File, levels map[string]int, budget *int64) error {
	rc, r, err := openPart(f, budget)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := xml.NewDecoder(r)
	var (
		buf    strings.Builder
		level  int  // the current paragraph's heading level
		inText bool // inside w:t
		depth  int  // nesting of w:p (text boxes can hold paragraphs)
	)
	flush := func() {
		t := strings.TrimSpace(buf.String())
		buf.Reset()
		if t == "" {
			return
		}
		b := Block{Kind: Paragraph, Text: t, Pos: len(doc.Blocks) + 1} // every block is one paragraph with text
		switch {
		case level == titleStyle:
			if doc.Title == "" {
				doc.Title = collapse(t)
			}
			b.Kind, b.Level, b.Text = Heading, 1, collapse(t)
		case level > 0:
			b.Kind, b.Level, b.Text = Heading, level, collapse(t)
		}
		doc.Blocks = append(doc.Blocks, b)
	}
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		tok, err := d.Token()
		if err == io.EOF {
			flush()
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Space != wordNS {
				continue
			}
			switch tok.Name.Local {
			case "p":
				if depth == 0 {
					level = 0
				}
				depth++
			case "pStyle":
				if depth == 1 {
					level = levels[attr(tok, "val")]
				}
			case "outlineLvl":
				if l, err := strconv.Atoi(attr(tok, "val")); err == nil && l >= 0 && l < 9 && depth == 1 && level == 0 {
					level = l + 1
				}
			case "t":
				inText = true
			case "tab":
				buf.WriteByte('\t')
			case "br", "cr":
				buf.WriteByte('\n')
			case "tc":
				flush()
			}
		case xml.EndElement:
			if tok.Name.Space != wordNS {
				continue
			}
			switch tok.Name.Local {
			case "t":
				inText = false
			case "p":
				depth--
				if depth <= 0 {
					depth = 0
					flush()
				} else {
					buf.WriteByte('\n')
				}
			}
		case xml.CharData:
			if inText {
				buf.Write(tok)
			}
		}
	}
}

// attr returns the value of a WordprocessingML attribute of se.
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && (a.Name.Space == wordNS || a.Name.Space == "") {
			return a.Value
		}
	}
	return ""
}
