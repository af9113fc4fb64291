package textsearch

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestSplit checks the chunking: chunks cover the text exactly, in order,
// with correct offsets, none longer than the size, and cut after white
// space when there is some near the end.
func TestSplit(t *testing.T) {
	texts := []string{
		"",
		"short",
		strings.Repeat("word ", 1000),
		strings.Repeat("x", 1000), // no white space at all
		strings.Repeat("日本語 ", 300) + strings.Repeat("é", 500),
		"line one\nline two\r\n\ttabbed   spaced\u00a0nbsp\u2003em",
	}
	for _, text := range texts {
		for _, size := range []int{1, 7, 64, 1000, 1 << 20} {
			chunks := Split(text, size)
			var b strings.Builder
			var off int64
			for i, c := range chunks {
				if c.Start != off {
					t.Errorf("size %d, chunk %d: start %d, want %d", size, i, c.Start, off)
				}
				if n := utf8.RuneCountInString(c.Text); n != c.Runes || n > size || n == 0 {
					t.Errorf("size %d, chunk %d: %d runes, recorded %d", size, i, n, c.Runes)
				}
				// A chunk cut short of the size was cut after white space.
				if last, _ := utf8.DecodeLastRuneInString(c.Text); i < len(chunks)-1 && c.Runes < size && !unicode.IsSpace(last) {
					t.Errorf("size %d, chunk %d ends mid-word: %q", size, i, c.Text)
				}
				b.WriteString(c.Text)
				off += int64(c.Runes)
			}
			if b.String() != text {
				t.Errorf("size %d: chunks do not join to the text", size)
			}
		}
	}
}
