package compact

import (
	"strings"
	"unicode/utf8"
)

// middleOut keeps the head (two fifths) and the tail (three fifths) of text
// and puts notice(removedTokens) between them, so that the result counts at
// most target tokens. It cuts at line ends near the cut points and always
// at character boundaries. When not even the notice fits, it returns the
// notice alone. have is the tokens of text.
func middleOut(k *counting, text string, have, target int, notice func(removed int) string) (out string, removed int) {
	noticeTokens, _ := k.text(notice(have))
	keep := target - noticeTokens - 2
	if keep <= 0 || have <= 0 {
		n := notice(have)
		return n, have
	}
	ratio := float64(keep) / float64(have)
	for attempt := 0; attempt < 8; attempt++ {
		keepBytes := int(float64(len(text)) * ratio)
		if keepBytes >= len(text) {
			keepBytes = len(text) - 1
		}
		if keepBytes <= 0 {
			break
		}
		headN := keepBytes * 2 / 5
		hEnd := cutBack(text, headN)
		tStart := cutForward(text, len(text)-(keepBytes-headN))
		if tStart < hEnd {
			tStart = hEnd
		}
		removed, _ = k.text(text[hEnd:tStart])
		var b strings.Builder
		b.Grow(hEnd + len(text) - tStart + 256)
		b.WriteString(text[:hEnd])
		b.WriteString("\n")
		b.WriteString(notice(removed))
		b.WriteString("\n")
		b.WriteString(text[tStart:])
		out = b.String()
		n, _ := k.text(out)
		if n <= target {
			return out, removed
		}
		ratio *= 0.9 * float64(target) / float64(n)
	}
	return notice(have), have
}

// cutBack returns a cut point at most n bytes into s: the end of a line if
// one ends in the last fifth, else a character boundary.
func cutBack(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 && i >= n*4/5 {
		return i + 1
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// cutForward returns a cut point at or after byte p of s: the start of a
// line if one starts within the next fifth of the rest, else a character
// boundary.
func cutForward(s string, p int) int {
	if p <= 0 {
		return 0
	}
	if p >= len(s) {
		return len(s)
	}
	window := (len(s) - p) / 5
	if i := strings.IndexByte(s[p:], '\n'); i >= 0 && i <= window {
		return p + i + 1
	}
	for p < len(s) && !utf8.RuneStart(s[p]) {
		p++
	}
	return p
}
