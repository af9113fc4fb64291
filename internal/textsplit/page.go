package textsplit

import "unicode/utf8"

// Reach returns how far, in characters, a page break may move back from its
// nominal position for pages of perPage characters: a fifth of the page, so
// that every page holds between 80 % and 120 % of perPage characters (the
// last one fewer). It is 0 for perPage < 5, where breaks stay nominal.
func Reach(perPage int) int {
	if perPage < 5 {
		return 0
	}
	return perPage / 5
}

// Break returns where a page break goes within window, given the nominal
// break position nominal (a character offset into window).
//
// The candidates are the positions 1 through nominal of window: Break
// returns the last paragraph boundary among them, else the last line
// boundary, else the last sentence boundary, else the last word boundary,
// else nominal itself (the boundaries are defined in the package
// documentation). Characters after nominal are ignored. A nominal outside
// [0, characters in window] is clamped to it.
//
// So the caller decides how far back a break may move by where window
// starts. To page a text of N characters into pages of perPage, put the
// break that ends page k-1 and starts page k (k >= 1) at
//
//	start := max(0, k*perPage - Reach(perPage))
//	b(k)  := start + Break(text[start : k*perPage], k*perPage - start)
//
// (offsets in characters), with b(0) = 0 and b(k) = N once k*perPage >= N.
// Page k is text[b(k) : b(k+1)]. Because b(k) depends only on the text
// around k*perPage, reading page k needs only the windows at its two ends,
// and pages k-1 and k agree on b(k), so the pages are contiguous and cover
// the text exactly once. Each b(k) lies in (k*perPage - Reach, k*perPage],
// so breaks increase strictly. [Pages] does this over a whole string.
func Break(window string, nominal int) int {
	if nominal <= 0 {
		return 0
	}
	rs := make([]rune, 0, min(nominal, len(window)))
	for _, r := range window {
		if len(rs) == nominal {
			break
		}
		rs = append(rs, r)
	}
	return lastBoundary(rs, 1, len(rs))
}

// Pages splits text into pages of about perPage characters, breaking as
// [Break] describes, and returns each page's text; they concatenate to text.
// A perPage below 1 is taken as 1. An empty text has no pages.
func Pages(text string, perPage int) []string {
	perPage = max(perPage, 1)
	n := utf8.RuneCountInString(text)
	reach := Reach(perPage)
	var pages []string
	prev, prevByte := 0, 0 // break in characters and in bytes
	for k := 1; prev < n; k++ {
		nominal := k * perPage
		if nominal >= n {
			pages = append(pages, text[prevByte:])
			break
		}
		// The window from start to nominal begins at or after prev.
		start := max(0, nominal-reach)
		startByte := byteOffset(text, prevByte, start-prev)
		endByte := byteOffset(text, startByte, nominal-start)
		b := start + Break(text[startByte:endByte], nominal-start)
		bByte := byteOffset(text, startByte, b-start)
		pages = append(pages, text[prevByte:bByte])
		prev, prevByte = b, bByte
	}
	return pages
}

// byteOffset returns the byte offset n characters after byte offset from.
func byteOffset(s string, from, n int) int {
	i := from
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
