package textsplit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzChunkText checks that ChunkText never panics and that its chunks keep
// every guarantee: bounded, overlapping exactly, reassembling to the text.
func FuzzChunkText(f *testing.F) {
	f.Add("one two.\n\nthree four.\n\nfive", 14, 0)
	f.Add("abcdefghij", 4, 2)
	f.Add("日本語のテキストです。次の文。", 5, 1)
	f.Add("ab\xffcd\xfe\r\n\r\nx. y", 3, 1)
	f.Add("", 0, 0)
	f.Add("x", -5, 7)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		// Bound the work: a size of 1 over a long text is many chunks.
		size = size % 4096
		chunks := ChunkText(text, size, overlap)
		checkChunks(t, text, size, overlap, chunks)
	})
}

// FuzzSplitMarkdownSections checks that splitting never panics and that
// sections are in order, in range and taken from the text.
func FuzzSplitMarkdownSections(f *testing.F) {
	f.Add("intro\n\n# One\n\nbody\n## Two ##\n```\n# code\n```\n")
	f.Add("---\na: b\n---\n# H\r\n~~~~\n~~~\n")
	f.Add("   ### x #\n#\n\xff# y\n")
	f.Fuzz(func(t *testing.T, md string) {
		sections := SplitMarkdownSections(md)
		checkSections(t, md, sections)
		for i, s := range sections {
			if s.Level < 0 || s.Level > 6 {
				t.Fatalf("section %d has level %d", i, s.Level)
			}
		}
	})
}

// FuzzSplitSections checks the same of plain-text sections.
func FuzzSplitSections(f *testing.F) {
	f.Add("Preface.\n\nIntroduction\n\nSome text.\n\n2.1 Scope\n\nIt covers this.\n")
	f.Add("Title\n=====\nbody.\n\nPart\n----\n")
	f.Add("\xff\n\n1.2.\t\n\nx")
	f.Fuzz(func(t *testing.T, text string) {
		sections := SplitSections(text)
		checkSections(t, text, sections)
		if strings.TrimSpace(text) != "" && len(sections) == 0 {
			t.Fatalf("no sections for %q", text)
		}
	})
}

// FuzzPages checks that pages reassemble to the text and that every break
// is the one the windowed rule computes.
func FuzzPages(f *testing.F) {
	for _, s := range pageTexts() {
		f.Add(s, 37)
	}
	f.Add("a\n\nb", 1)
	f.Fuzz(func(t *testing.T, text string, perPage int) {
		perPage = max(perPage%2000, 1)
		pages := Pages(text, perPage)
		if strings.Join(pages, "") != text {
			t.Fatalf("pages do not reassemble the text")
		}
		runes := []rune(text)
		b := 0
		for k, p := range pages {
			if p == "" {
				t.Fatalf("page %d is empty", k)
			}
			if got := enginePageBreak(runes, k, perPage); got != b {
				t.Fatalf("page %d starts at %d, the windowed rule says %d", k, b, got)
			}
			b += utf8.RuneCountInString(p)
		}
	})
}
