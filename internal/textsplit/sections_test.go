package textsplit

import (
	"fmt"
	"strings"
	"testing"
)

func formatSections(ss []Section) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "[%d@%d %q] %q\n", s.Level, s.Offset, s.Heading, s.Body)
	}
	return b.String()
}

func TestSplitMarkdownSections(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []Section
	}{
		{"empty", "", nil},
		{"blank", "\n  \n", nil},
		{"no headings", "just text\nmore\n", []Section{{Body: "just text\nmore"}}},
		{"preamble and headings",
			"intro\n\n# One\n\nbody 1\n\n## Two ##\nbody 2\n### Three #s#\n",
			[]Section{
				{Body: "intro", Offset: 0},
				{Heading: "One", Level: 1, Body: "body 1", Offset: 7},
				{Heading: "Two", Level: 2, Body: "body 2", Offset: 22},
				{Heading: "Three #s#", Level: 3, Offset: 39},
			}},
		{"preamble offset skips blank lines", "\n\n  lead\n# H\n", []Section{
			{Body: "  lead", Offset: 2},
			{Heading: "H", Level: 1, Offset: 9},
		}},
		{"not headings", "#5 is not\n####### seven\n    # indented code\n\\# escaped\n#\tTab ok\n", []Section{
			{Body: "#5 is not\n####### seven\n    # indented code\n\\# escaped", Offset: 0},
			{Heading: "Tab ok", Level: 1, Offset: 55},
		}},
		{"empty headings", "#\n## ##\n", []Section{{Level: 1}, {Level: 2, Offset: 2}}},
		{"up to three spaces", "   ## Spaced\nx", []Section{{Heading: "Spaced", Level: 2, Body: "x"}}},
		{"fenced code", "# A\n```go\n# not a heading\n```\n# B\n~~~~\n# no\n~~~\n# still code\n~~~~\n# C\n", []Section{
			{Heading: "A", Level: 1, Body: "```go\n# not a heading\n```"},
			{Heading: "B", Level: 1, Body: "~~~~\n# no\n~~~\n# still code\n~~~~", Offset: 30},
			{Heading: "C", Level: 1, Offset: 66},
		}},
		{"unclosed fence", "# A\n```\n# code\n", []Section{{Heading: "A", Level: 1, Body: "```\n# code"}}},
		{"backtick fence with backticks in info is not a fence", "``` a`b\n# H\n", []Section{
			{Body: "``` a`b", Offset: 0}, {Heading: "H", Level: 1, Offset: 8},
		}},
		{"front matter", "---\ntitle: x\n# not heading\n---\n# Real\n", []Section{
			{Body: "---\ntitle: x\n# not heading\n---"},
			{Heading: "Real", Level: 1, Offset: 31},
		}},
		{"thematic break is not front matter later", "x\n---\n# H\n", []Section{
			{Body: "x\n---"}, {Heading: "H", Level: 1, Offset: 6},
		}},
		{"CRLF", "# A\r\nbody\r\n\r\n# B\r\n", []Section{
			{Heading: "A", Level: 1, Body: "body"}, {Heading: "B", Level: 1, Offset: 13},
		}},
		{"offsets in characters", "é\n# Ü\nñ", []Section{
			{Body: "é"}, {Heading: "Ü", Level: 1, Body: "ñ", Offset: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitMarkdownSections(tt.md)
			if g, w := formatSections(got), formatSections(tt.want); g != w {
				t.Errorf("SplitMarkdownSections(%q) =\n%s\nwant\n%s", tt.md, g, w)
			}
			checkSections(t, tt.md, got)
		})
	}
}

func TestSplitSections(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Section
	}{
		{"empty", "", nil},
		{"paragraphs without headings", "First paragraph, one line.\n\nSecond one\nspans two lines.\n",
			[]Section{
				{Body: "First paragraph, one line."},
				{Body: "Second one\nspans two lines.", Offset: 28},
			}},
		{"headings",
			"Preface text here.\n\nIntroduction\n\nSome text.\nMore text.\n\n2.1 Scope\n\nIt covers this.\n\nSecond para.\n",
			[]Section{
				{Body: "Preface text here."},
				{Heading: "Introduction", Level: 1, Body: "Some text.\nMore text.", Offset: 20},
				{Heading: "2.1 Scope", Level: 2, Body: "It covers this.\n\nSecond para.", Offset: 57},
			}},
		{"numbered levels", "1. Top\n\nx.\n\n1.2.3 Deep\n\ny.\n\n12 Monkeys\n\nz.\n", []Section{
			{Heading: "1. Top", Level: 1, Body: "x."},
			{Heading: "1.2.3 Deep", Level: 3, Body: "y.", Offset: 12},
			{Heading: "12 Monkeys", Level: 1, Body: "z.", Offset: 28},
		}},
		{"underlined", "Title\n=====\nbody.\n\nPart\n----\nmore\n", []Section{
			{Heading: "Title", Level: 1, Body: "body."},
			{Heading: "Part", Level: 2, Body: "more", Offset: 19},
		}},
		// The shape rule cannot tell a one-line body without final
		// punctuation from a heading.
		{"short body reads as a heading", "Title\n\nSee below\n\nText.", []Section{
			{Heading: "Title", Level: 1},
			{Heading: "See below", Level: 1, Body: "Text.", Offset: 7},
		}},
		{"sentences are not headings", "It ends here.\n\nA question?\n\nA list:\n\n123\n\nlast line", []Section{
			{Body: "It ends here."}, {Body: "A question?", Offset: 15},
			{Body: "A list:", Offset: 28}, {Body: "123", Offset: 37}, {Body: "last line", Offset: 42},
		}},
		{"consecutive headings", "Part One\n\nChapter 1\n\nText.\n", []Section{
			{Heading: "Part One", Level: 1},
			{Heading: "Chapter 1", Level: 1, Body: "Text.", Offset: 10},
		}},
		{"long line is not a heading", strings.Repeat("w", 81) + "\n\nbody", []Section{
			{Body: strings.Repeat("w", 81)}, {Body: "body", Offset: 83},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitSections(tt.text)
			if g, w := formatSections(got), formatSections(tt.want); g != w {
				t.Errorf("SplitSections(%q) =\n%s\nwant\n%s", tt.text, g, w)
			}
			checkSections(t, tt.text, got)
		})
	}
}

// checkSections asserts what holds for any split: offsets increase and are
// in range, a heading's line starts at its offset, and each body is a piece
// of the text that starts after its section's offset.
func checkSections(t *testing.T, text string, sections []Section) {
	t.Helper()
	runes := []rune(text)
	prev := -1
	for i, s := range sections {
		if s.Offset <= prev || s.Offset > len(runes) {
			t.Fatalf("section %d: offset %d after %d, text of %d characters", i, s.Offset, prev, len(runes))
		}
		prev = s.Offset
		rest := string(runes[s.Offset:])
		if s.Level == 0 && s.Heading != "" {
			t.Fatalf("section %d has a heading but level 0", i)
		}
		// Offsets count invalid bytes as one character each, as []rune does,
		// so compare with the text as []rune reads it.
		heading, body := string([]rune(s.Heading)), string([]rune(s.Body))
		if s.Level > 0 && !strings.Contains(strings.SplitN(rest, "\n", 2)[0], heading) {
			t.Fatalf("section %d: heading %q is not on the line at offset %d: %.40q", i, s.Heading, s.Offset, rest)
		}
		if s.Level == 0 && !strings.HasPrefix(rest, body) {
			t.Fatalf("section %d: body %.40q does not start at offset %d: %.40q", i, s.Body, s.Offset, rest)
		}
		if !strings.Contains(rest, body) {
			t.Fatalf("section %d: body %.40q is not in the text after its offset", i, s.Body)
		}
	}
}
