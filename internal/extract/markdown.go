package extract

import (
	"strings"

	"github.com/ctxkit/ctxkit/internal/textsplit"
)

// extractMarkdown reads Markdown's ATX headings (with textsplit's rules:
// not inside fenced code, front matter skipped) and the paragraphs under
// them. A fenced code block holding blank lines becomes several paragraphs.
func extractMarkdown(doc *Document, md string) {
	for _, s := range textsplit.SplitMarkdownSections(md) {
		if s.Level > 0 {
			h := strings.TrimSpace(s.Heading)
			if h != "" {
				doc.Blocks = append(doc.Blocks, Block{Kind: Heading, Level: s.Level, Text: h})
				if s.Level == 1 && doc.Title == "" {
					doc.Title = h
				}
			}
		}
		doc.Blocks = paragraphs(doc.Blocks, s.Body, 0)
	}
}
