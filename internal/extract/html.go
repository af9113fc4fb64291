package extract

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// extractHTML keeps the visible text of an HTML document: h1 to h6 become
// headings, block elements (p, div, li, td, pre, br...) end a paragraph,
// and script, style, template, noscript, svg and elements with the hidden
// attribute or aria-hidden="true" are dropped. Whitespace is collapsed
// except inside pre.
func extractHTML(doc *Document, data []byte) error {
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return err
	}
	w := htmlWalker{doc: doc}
	w.walk(root, false)
	w.flush()
	return nil
}

type htmlWalker struct {
	doc *Document
	buf strings.Builder
}

// flush ends the current paragraph.
func (w *htmlWalker) flush() {
	if t := strings.TrimSpace(w.buf.String()); t != "" {
		w.doc.Blocks = append(w.doc.Blocks, Block{Kind: Paragraph, Text: t})
	}
	w.buf.Reset()
}

func (w *htmlWalker) walk(n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data, pre)
		return
	case html.ElementNode:
		if hiddenElement(n) {
			return
		}
		switch n.DataAtom {
		case atom.Title:
			if w.doc.Title == "" {
				w.doc.Title = collapse(textContent(n))
			}
			return
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			w.flush()
			if t := collapse(textContent(n)); t != "" {
				w.doc.Blocks = append(w.doc.Blocks, Block{Kind: Heading, Level: int(n.Data[1] - '0'), Text: t})
			}
			return
		case atom.Br:
			w.buf.WriteByte('\n')
			return
		case atom.Pre:
			pre = true
		}
	}
	block := n.Type == html.ElementNode && isBlock(n.DataAtom)
	if block {
		w.flush()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c, pre)
	}
	if block {
		w.flush()
	} else if n.Type == html.ElementNode && (n.DataAtom == atom.Td || n.DataAtom == atom.Th) {
		w.buf.WriteByte(' ')
	}
}

// text adds a text node's text to the paragraph.
func (w *htmlWalker) text(s string, pre bool) {
	if pre {
		w.buf.WriteString(s)
		return
	}
	if s == "" {
		return
	}
	if isHTMLSpace(s[0]) {
		w.space()
	}
	fields := strings.Fields(s)
	for i, f := range fields {
		if i > 0 {
			w.buf.WriteByte(' ')
		}
		w.buf.WriteString(f)
	}
	if len(fields) > 0 && isHTMLSpace(s[len(s)-1]) {
		w.space()
	}
}

// space adds one space unless the paragraph is empty or already ends in
// whitespace.
func (w *htmlWalker) space() {
	s := w.buf.String()
	if s != "" && !isHTMLSpace(s[len(s)-1]) {
		w.buf.WriteByte(' ')
	}
}

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// hiddenElement reports whether n and its children are never shown.
func hiddenElement(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Svg, atom.Iframe, atom.Object:
		return true
	}
	for _, a := range n.Attr {
		if a.Namespace == "" && (a.Key == "hidden" || a.Key == "aria-hidden" && strings.EqualFold(a.Val, "true")) {
			return true
		}
	}
	return false
}

// textContent returns the text under n, without hidden elements.
func textContent(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
			return
		}
		if n.Type == html.ElementNode && hiddenElement(n) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// collapse returns s with runs of whitespace as single spaces, trimmed.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// isBlock reports whether an element ends a paragraph before and after it.
func isBlock(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Dl, atom.Dt, atom.Dd, atom.Tr, atom.Table,
		atom.Thead, atom.Tbody, atom.Tfoot, atom.Caption, atom.Pre, atom.Blockquote, atom.Section,
		atom.Article, atom.Aside, atom.Header, atom.Footer, atom.Nav, atom.Main, atom.Figure,
		atom.Figcaption, atom.Hr, atom.Address, atom.Details, atom.Summary, atom.Form, atom.Fieldset,
		atom.Body:
		return true
	}
	return false
}
