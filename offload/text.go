package offload

import "github.com/ctxkit/ctxkit/internal/textsplit"

// Text transforms for producers that return long text: split it before
// storing so that the model explores a list of chunks or sections, which
// search and pipelines handle better than one long string.

// Section is one part of a text split by SplitSections or SplitMarkdownSections.
type Section = textsplit.Section

// ChunkText splits text into chunks of at most size characters that overlap
// by overlap characters, breaking at paragraph, line, sentence or word
// boundaries where it can.
func ChunkText(text string, size, overlap int) []string {
	return textsplit.ChunkText(text, size, overlap)
}

// SplitSections splits plain text into sections at its headings.
func SplitSections(text string) []Section { return textsplit.SplitSections(text) }

// SplitMarkdownSections splits Markdown at its ATX headings (# to ######),
// ignoring lines in fenced code blocks.
func SplitMarkdownSections(md string) []Section { return textsplit.SplitMarkdownSections(md) }
