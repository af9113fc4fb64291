package extract

import (
	"strings"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/textsplit"
)

// extractMarkdown reads Markdown's ATX headings (with textsplit's rules:
// not inside fenced code, front matter skipped) and the paragraphs under
// them, each with the line it starts on. A fenced code block holding blank
// lines becomes several paragraphs.
func extractMarkdown(doc *Document, md string) {
	c := cursor{s: md, line: 1}
	for _, s := range textsplit.SplitMarkdownSections(md) {
		c.toChar(s.Offset) // the heading's line, or a body without one
		if s.Level > 0 {
			h := strings.TrimSpace(s.Heading)
			if h != "" {
				doc.Blocks = append(doc.Blocks, Block{Kind: Heading, Level: s.Level, Text: h, Pos: c.line})
				if s.Level == 1 && doc.Title == "" {
					doc.Title = h
				}
			}
			end := strings.IndexByte(md[c.b:], '\n')
			if end < 0 {
				end = len(md) - c.b
			}
			c.toByte(c.b + end)
		}
		if s.Body == "" {
			continue
		}
		// The body follows, after blank lines only: its first occurrence.
		line := 0
		if at := strings.Index(md[c.b:], s.Body); at >= 0 {
			c.toByte(c.b + at)
			line = c.line
		}
		doc.Blocks = paragraphs(doc.Blocks, s.Body, line)
	}
}

// cursor walks forward through a text, keeping its byte offset, character
// offset and line (1-based) in step.
type cursor struct {
	s    string
	b, c int // byte and character offsets
	line int
}

// toChar moves to character offset c; never backwards.
func (k *cursor) toChar(c int) {
	b := k.b
	for ; k.c < c && b < len(k.s); k.c++ {
		if k.s[b] < utf8.RuneSelf {
			b++
		} else {
			_, n := utf8.DecodeRuneInString(k.s[b:])
			b += n
		}
	}
	k.line += strings.Count(k.s[k.b:b], "\n")
	k.b = b
}

// toByte moves to byte offset b, at the start of a character; never
// backwards.
func (k *cursor) toByte(b int) {
	if b <= k.b {
		return
	}
	seg := k.s[k.b:b]
	k.line += strings.Count(seg, "\n")
	k.c += utf8.RuneCountInString(seg)
	k.b = b
}
