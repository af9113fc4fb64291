package textsearch

import (
	"unicode"
	"unicode/utf8"
)

// Chunk is a piece of a text.
type Chunk struct {
	Start int64 // characters (runes) before it in the text
	Runes int   // its characters
	Text  string
}

// Split cuts text into chunks of at most size characters, each ending
// after white space when there is some in its last quarter. Query terms
// never contain white space and tokens never do, so no match and no token
// spans two chunks, except inside an unbroken run of more than size/4
// characters.
func Split(text string, size int) []Chunk {
	var chunks []Chunk
	var start int64
	for i := 0; i < len(text); {
		j, n := i, 0
		cut, cutRunes := -1, 0
		for j < len(text) && n < size {
			r, w := utf8.DecodeRuneInString(text[j:])
			j += w
			n++
			if n >= size-size/4 && unicode.IsSpace(r) {
				cut, cutRunes = j, n
			}
		}
		if j < len(text) && cut > 0 {
			j, n = cut, cutRunes
		}
		chunks = append(chunks, Chunk{Start: start, Runes: n, Text: text[i:j]})
		start += int64(n)
		i = j
	}
	return chunks
}
