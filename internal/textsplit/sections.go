package textsplit

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Section is a part of a document: a heading and the text under it.
type Section struct {
	// Heading is the heading's text without its markup; empty for a section
	// that has no heading.
	Heading string
	// Level is the heading's level, 1 for the top (Markdown's #); 0 for a
	// section without a heading.
	Level int
	// Body is the text after the heading up to the next heading, as it
	// stands in the input but without blank lines at its start and
	// whitespace at its end.
	Body string
	// Offset is the character offset in the input where the section starts:
	// its heading's line, or for a section without a heading the first line
	// of its Body.
	Offset int
}

// maxHeading is the longest line, in characters, that SplitSections takes
// for a heading.
const maxHeading = 80

// SplitSections splits plain text into sections at headings, found by the
// shape of the text since plain text has no markup.
//
// The text is read as blocks of lines separated by blank lines. A block is a
// heading when it is
//
//   - one line of at most 80 characters that has a letter, does not end in
//     . , ; : ! or ? (which would make it a sentence), and is not the last
//     block; its level is the number of parts of a leading section number
//     ("2.3 Scope" is level 2, "4. Results" level 1), else 1; or
//   - a line underlined by a line of three or more '=' (level 1) or '-'
//     (level 2), as in Setext and reStructuredText.
//
// Each heading starts a section that runs to the next heading, so
// consecutive headings ("Part One", then "Chapter 1") give sections with
// empty bodies; by the same rule a one-line body without final punctuation
// ("See below") reads as a heading of its own. Text before the first
// heading is a section without a heading. When the text has no
// headings at all, each block (paragraph) is a section of its own, so that
// the result is still a useful split. Blank text has no sections.
func SplitSections(text string) []Section {
	blocks := splitBlocks(text)
	var sections []Section
	var cur *Section // the section being built
	bodyFrom := -1   // index of the first block of cur's body
	finish := func(upTo int) {
		if cur == nil {
			return
		}
		if bodyFrom >= 0 && bodyFrom < upTo {
			cur.Body = strings.TrimRightFunc(text[blocks[bodyFrom].start:blocks[upTo-1].end], unicode.IsSpace)
		}
		sections = append(sections, *cur)
	}
	for i, b := range blocks {
		heading, level, ok := b.heading(text, i == len(blocks)-1)
		if !ok {
			if cur == nil {
				cur = &Section{Offset: b.offset}
				bodyFrom = i
			}
			continue
		}
		finish(i)
		cur = &Section{Heading: heading, Level: level, Offset: b.offset}
		bodyFrom = i + 1
	}
	finish(len(blocks))
	for _, s := range sections {
		if s.Level > 0 {
			return sections
		}
	}
	// No headings: one section per paragraph.
	sections = sections[:0]
	for _, b := range blocks {
		sections = append(sections, Section{Body: strings.TrimRightFunc(text[b.start:b.end], unicode.IsSpace), Offset: b.offset})
	}
	return sections
}

// block is a run of non-blank lines.
type block struct {
	start, end int // byte offsets: the first line's start, the last line's end
	offset     int // the first line's character offset
	lines      []string
}

// splitBlocks returns the blocks of text in order.
func splitBlocks(text string) []block {
	var blocks []block
	var cur *block
	chars := 0
	for pos := 0; pos < len(text); {
		line, next := lineAt(text, pos)
		if strings.TrimSpace(line) == "" {
			cur = nil
		} else {
			if cur == nil {
				blocks = append(blocks, block{start: pos, offset: chars})
				cur = &blocks[len(blocks)-1]
			}
			cur.end = pos + len(line)
			cur.lines = append(cur.lines, line)
			if len(cur.lines) == 2 && underline(line) > 0 {
				// A heading and its underline: the lines after them start
				// a new block, the heading's body.
				cur = nil
			}
		}
		chars += utf8.RuneCountInString(text[pos:next])
		pos = next
	}
	return blocks
}

// lineAt returns the line starting at byte offset pos, without its line
// break, and the offset of the next line.
func lineAt(text string, pos int) (line string, next int) {
	if k := strings.IndexByte(text[pos:], '\n'); k >= 0 {
		return strings.TrimSuffix(text[pos:pos+k], "\r"), pos + k + 1
	}
	return text[pos:], len(text)
}

// heading reports whether the block is a heading, as SplitSections defines.
func (b block) heading(text string, last bool) (heading string, level int, ok bool) {
	if len(b.lines) == 2 {
		if level := underline(b.lines[1]); level > 0 {
			return strings.TrimSpace(b.lines[0]), level, true
		}
	}
	if len(b.lines) != 1 || last {
		return "", 0, false
	}
	h := strings.TrimSpace(b.lines[0])
	if utf8.RuneCountInString(h) > maxHeading || strings.IndexFunc(h, unicode.IsLetter) < 0 {
		return "", 0, false
	}
	if r, _ := utf8.DecodeLastRuneInString(h); strings.ContainsRune(".,;:!?", r) {
		return "", 0, false
	}
	return h, numberLevel(h), true
}

// underline returns the level of the heading that line underlines: 1 for a
// line of three or more '=', 2 for '-', else 0.
func underline(line string) int {
	u := strings.TrimSpace(line)
	if len(u) < 3 || strings.Count(u, u[:1]) != len(u) {
		return 0
	}
	switch u[0] {
	case '=':
		return 1
	case '-':
		return 2
	}
	return 0
}

// numberLevel returns the number of parts of the section number that starts
// h ("2.3 Scope" has two, "4. Results" one), or 1 when h has none.
func numberLevel(h string) int {
	parts, i := 0, 0
	for {
		j := i
		for j < len(h) && '0' <= h[j] && h[j] <= '9' {
			j++
		}
		if j == i {
			break
		}
		parts++
		i = j
		if i < len(h) && h[i] == '.' {
			i++
			continue
		}
		break
	}
	if parts == 0 || i >= len(h) || (h[i] != ' ' && h[i] != '\t') {
		return 1
	}
	return parts
}

// SplitMarkdownSections splits Markdown into sections at its ATX headings,
// the lines "# Title" through "###### Title" (up to three spaces of
// indentation; the #s followed by a space or the end of the line; an
// optional closing run of #s is dropped). Lines inside fenced code blocks
// (``` or ~~~, closed by a fence of the same character at least as long,
// or by the end of the text) are never headings, nor are lines of a YAML
// front matter block at the very start ("---" up to "---" or "...").
// Setext headings (a line underlined by === or ---) are not recognised,
// since a "---" line is as often a thematic break.
//
// Each heading starts a section that runs to the next heading of any level;
// sections are not nested, and Level keeps the hierarchy. Text before the
// first heading, if not blank, is a section without a heading. Blank text
// has no sections.
func SplitMarkdownSections(md string) []Section {
	var sections []Section
	cur := Section{}
	bodyStart, bodyChars := 0, 0 // where cur's body starts, in bytes and characters
	finish := func(end int) {
		body := md[bodyStart:end]
		trimmed := trimLeadingBlankLines(body)
		cur.Body = strings.TrimRightFunc(trimmed, unicode.IsSpace)
		if cur.Level == 0 {
			if cur.Body == "" {
				return
			}
			cur.Offset = bodyChars + utf8.RuneCountInString(body[:len(body)-len(trimmed)])
		}
		sections = append(sections, cur)
	}
	var fence byte // the fence character while inside a fenced code block
	fenceLen := 0
	chars := 0
	pos := frontMatterEnd(md)
	chars += utf8.RuneCountInString(md[:pos])
	for pos < len(md) {
		line, next := lineAt(md, pos)
		switch {
		case fence != 0:
			if closesFence(line, fence, fenceLen) {
				fence = 0
			}
		default:
			if c, n := opensFence(line); n > 0 {
				fence, fenceLen = c, n
				break
			}
			if level, heading, ok := atxHeading(line); ok {
				finish(pos)
				cur = Section{Heading: heading, Level: level, Offset: chars}
				bodyStart = next
				bodyChars = chars + utf8.RuneCountInString(md[pos:next])
			}
		}
		chars += utf8.RuneCountInString(md[pos:next])
		pos = next
	}
	finish(len(md))
	return sections
}

// trimLeadingBlankLines removes the blank lines at the start of s.
func trimLeadingBlankLines(s string) string {
	for s != "" {
		line, next := lineAt(s, 0)
		if strings.TrimSpace(line) != "" {
			break
		}
		s = s[next:]
	}
	return s
}

// frontMatterEnd returns the byte offset just past a YAML front matter
// block at the start of md, or 0 when there is none.
func frontMatterEnd(md string) int {
	first, pos := lineAt(md, 0)
	if first != "---" {
		return 0
	}
	for pos < len(md) {
		line, next := lineAt(md, pos)
		if line == "---" || line == "..." {
			return next
		}
		pos = next
	}
	return 0
}

// indent returns line without up to three leading spaces, and false when it
// is indented by four or more (a code block, not markup).
func indent(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	if n > 3 {
		return line, false
	}
	return line[n:], true
}

// atxHeading parses an ATX heading line.
func atxHeading(line string) (level int, heading string, ok bool) {
	s, ok := indent(line)
	if !ok {
		return 0, "", false
	}
	for level < len(s) && s[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(s) && s[level] != ' ' && s[level] != '\t') {
		return 0, "", false
	}
	heading = strings.Trim(s[level:], " \t")
	// Drop a closing run of #s when a space precedes it or it is all there is.
	if t := strings.TrimRight(heading, "#"); t != heading && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		heading = strings.TrimRight(t, " \t")
	}
	return level, heading, true
}

// opensFence reports the character and length of the code fence that line
// opens, or a length of 0.
func opensFence(line string) (byte, int) {
	s, ok := indent(line)
	if !ok || s == "" || (s[0] != '`' && s[0] != '~') {
		return 0, 0
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 || (s[0] == '`' && strings.IndexByte(s[n:], '`') >= 0) {
		return 0, 0
	}
	return s[0], n
}

// closesFence reports whether line closes a fence of c repeated n times.
func closesFence(line string, c byte, n int) bool {
	s, ok := indent(line)
	if !ok {
		return false
	}
	k := 0
	for k < len(s) && s[k] == c {
		k++
	}
	return k >= n && strings.Trim(s[k:], " \t") == ""
}
