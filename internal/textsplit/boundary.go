// Package textsplit cuts text into pieces at natural boundaries: chunks of a
// bounded size for embedding or retrieval ([ChunkText]), sections under
// headings ([SplitSections], [SplitMarkdownSections]), and pages that never
// end mid-paragraph when they can help it ([Break], [Pages]).
//
// Everything here measures text in characters (runes), like every text
// offset in ctxkit, and treats each byte of invalid UTF-8 as one character,
// as a range loop over a string does. Nothing panics on any input or
// argument; out-of-range sizes are clamped as each function documents.
//
// A boundary is a position between two characters. In order of preference:
//
//   - paragraph: just after a blank line (a line break, optional spaces or
//     tabs, and another line break);
//   - line: just after a line break;
//   - sentence: just after '.', '!' or '?', optionally followed by closing
//     quotes or brackets, and then whitespace; or just after a CJK full stop,
//     exclamation or question mark (。！？), which need no space;
//   - word: just after whitespace other than a carriage return, or just after
//     a CJK character or comma, since CJK text puts no spaces between words.
//
// Whether a position is a boundary depends only on the characters before it,
// so text after a position never changes where a break goes.
package textsplit

import "unicode"

// boundary is a kind of boundary, from most to least preferred.
type boundary int

const (
	paragraph boundary = iota
	line
	sentence
	word
)

// is reports whether position p of rs (between rs[p-1] and rs[p], 1 <= p <=
// len(rs)) is a boundary of kind b.
func (b boundary) is(rs []rune, p int) bool {
	prev := rs[p-1]
	switch b {
	case paragraph:
		if prev != '\n' {
			return false
		}
		for i := p - 2; i >= 0; i-- {
			switch rs[i] {
			case '\n':
				return true
			case ' ', '\t', '\r':
				continue
			}
			return false
		}
		return false
	case line:
		return prev == '\n'
	case sentence:
		switch prev {
		case '。', '！', '？':
			return true
		}
		if !unicode.IsSpace(prev) {
			return false
		}
		i := p - 2
		for i >= 0 && isCloser(rs[i]) {
			i--
		}
		return i >= 0 && (rs[i] == '.' || rs[i] == '!' || rs[i] == '?')
	default: // word
		return prev != '\r' && unicode.IsSpace(prev) || isCJK(prev)
	}
}

// isCJK reports whether r is a Chinese, Japanese or Korean character, or a
// CJK comma, after which a word may end.
func isCJK(r rune) bool {
	return r >= 0x2E80 && (r == '、' || r == '，' || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul))
}

// isCloser reports whether r closes a quotation or parenthesis after the
// end of a sentence, as in `He said "Stop."` or `(See below.)`.
func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '»', '」', '』':
		return true
	}
	return false
}

// lastBoundary returns the last position p in [lo, hi] of rs that is a
// boundary of the most preferred kind found there, or hi when there is none.
// It requires 1 <= lo and hi <= len(rs); an empty range returns hi.
func lastBoundary(rs []rune, lo, hi int) int {
	for b := paragraph; b <= word; b++ {
		for p := hi; p >= lo; p-- {
			if b.is(rs, p) {
				return p
			}
		}
	}
	return hi
}
