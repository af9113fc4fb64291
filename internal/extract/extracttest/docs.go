// Package extracttest writes small documents of the formats
// internal/extract reads, for tests: PDFs set in Courier with a correct
// cross-reference table, and DOCX files with styles and a title.
package extracttest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// MakePDF writes a minimal PDF 1.4 file by hand: one page per element of
// pages, each line of a page set in 12-point Courier (widths given, 600 per
// mille) 14 points below the one before, and an empty line as a paragraph
// gap. The Info dictionary carries title.
func MakePDF(title string, pages [][]string) []byte {
	var streams []string
	for _, lines := range pages {
		var cs strings.Builder
		cs.WriteString("BT /F1 12 Tf 72 760 Td\n")
		for i, l := range lines {
			if i > 0 {
				cs.WriteString("0 -14 Td\n")
			}
			if l == "" {
				cs.WriteString("0 -14 Td\n")
				continue
			}
			r := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`)
			fmt.Fprintf(&cs, "(%s) Tj\n", r.Replace(l))
		}
		cs.WriteString("ET")
		streams = append(streams, cs.String())
	}
	return MakePDFStreams(title, streams)
}

// MakePDFStreams writes a PDF whose pages have the given content streams,
// with font F1 (Courier) in their resources, and a correct cross-reference
// table.
func MakePDFStreams(title string, streams []string) []byte {
	var objs []string // objs[i] is object i+1
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	widths := strings.TrimSpace(strings.Repeat("600 ", 95))
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Courier /FirstChar 32 /LastChar 126 /Widths [" + widths + "] >>")
	pagesObj := add("") // filled in below
	var kids []string
	for _, cs := range streams {
		content := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(cs), cs))
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", pagesObj, font, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))
	catalog := add(fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj))
	info := add(fmt.Sprintf("<< /Title (%s) >>", title))

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, catalog, info, xref)
	return b.Bytes()
}

// DOCXPara is a paragraph of a generated DOCX: its style id ("" for none)
// and its runs of text ("\t" a tab, "\n" a line break).
type DOCXPara struct {
	Style string
	Runs  []string
}

// MakeDOCX writes a minimal DOCX with archive/zip: word/document.xml with
// the paragraphs, word/styles.xml defining styleIDs (id → name, as
// "Heading1" → "heading 1"), and docProps/core.xml with title when set.
func MakeDOCX(t testing.TB, title string, styles map[string]string, paras []DOCXPara) []byte {
	t.Helper()
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		if p.Style != "" {
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="%s"/></w:pPr>`, p.Style)
		}
		for _, r := range p.Runs {
			switch r {
			case "\t":
				body.WriteString("<w:r><w:tab/></w:r>")
			case "\n":
				body.WriteString("<w:r><w:br/></w:r>")
			default:
				fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r>`, xmlEscape(r))
			}
		}
		body.WriteString("</w:p>")
	}
	var st strings.Builder
	for _, id := range slices.Sorted(maps.Keys(styles)) {
		fmt.Fprintf(&st, `<w:style w:type="paragraph" w:styleId="%s"><w:name w:val="%s"/></w:style>`, id, styles[id])
	}
	files := map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"word/document.xml":   `<?xml version="1.0"?><w:document ` + ns + `><w:body>` + body.String() + `</w:body></w:document>`,
		"word/styles.xml":     `<?xml version="1.0"?><w:styles ` + ns + `>` + st.String() + `</w:styles>`,
	}
	if title != "" {
		files["docProps/core.xml"] = `<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + xmlEscape(title) + `</dc:title></cp:coreProperties>`
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml", "word/styles.xml", "docProps/core.xml"} {
		content, ok := files[name]
		if !ok {
			continue
		}
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
