package textsplit

import "unicode/utf8"

// ChunkText splits text into chunks of at most size characters, each
// starting with the last overlap characters of the one before, for
// embedding or retrieval where a passage should not lose its context at a
// cut.
//
// A chunk ends at the best boundary in the second half of its new part (the
// part after the overlap): the last paragraph boundary there, else the last
// line boundary, else sentence, else word (see the package documentation),
// else exactly at size characters. The last chunk ends with the text.
// Keeping the break in the second half bounds the number of chunks to about
// twice len/(size-overlap) whatever the text looks like.
//
// The chunks are substrings of text, so they share its memory, and they
// reassemble to it exactly: chunks[0] followed by each later chunk without
// its first overlap characters is text. An empty text has no chunks; a size
// below 1 returns the whole text as one chunk; overlap is clamped to
// [0, size/2] so that every chunk adds text of its own.
func ChunkText(text string, size, overlap int) []string {
	if text == "" {
		return nil
	}
	if size < 1 {
		return []string{text}
	}
	overlap = min(max(overlap, 0), size/2)
	lo := overlap + (size-overlap+1)/2 // earliest end of a chunk, in characters

	var chunks []string
	var rs []rune  // the characters of the current window
	var offs []int // the byte offset of each, and of the window's end
	for start := 0; ; {
		rs, offs = rs[:0], offs[:0]
		i := start
		for len(rs) < size && i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			rs = append(rs, r)
			offs = append(offs, i)
			i += n
		}
		if i == len(text) {
			return append(chunks, text[start:])
		}
		offs = append(offs, i)
		p := lastBoundary(rs, lo, size)
		chunks = append(chunks, text[start:offs[p]])
		start = offs[p-overlap]
	}
}
