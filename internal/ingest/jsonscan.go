package ingest

import (
	"bytes"
	"unicode/utf8"
)

// This file holds helpers over JSON bytes that are already known to be
// valid: finding where a value ends, and rewriting a value compactly.

// isSpace reports whether c is JSON's insignificant whitespace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// trimSpace removes JSON whitespace from both ends of data.
func trimSpace(data []byte) []byte {
	i := skipSpace(data, 0)
	j := len(data)
	for j > i && isSpace(data[j-1]) {
		j--
	}
	return data[i:j]
}

// scanString returns the index just past the closing quote of the string
// whose contents start at data[i] (just after the opening quote), or
// len(data) when the string is not closed.
func scanString(data []byte, i int) int {
	for {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return len(data)
		}
		j := i + k
		// The quote is escaped when an odd number of backslashes precede it.
		// Runs of backslashes end at quotes, so counting them stays linear.
		n := 0
		for p := j - 1; p >= i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}

// scanValue finds the end of the valid JSON value that starts at data[i]: it
// scans up to the first ',', ']' or '}' outside strings and at the value's
// own level, or to the end of data, and returns the end of the value with
// trailing whitespace excluded and the index where it stopped.
func scanValue(data []byte, i int) (end, stop int) {
	depth := 0
	end = i
	for i < len(data) {
		switch data[i] {
		case '"':
			i = scanString(data, i+1)
			end = i
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return end, i
			}
			depth--
		case ',':
			if depth == 0 {
				return end, i
			}
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		i++
		end = i
	}
	return end, i
}

// appendCompact appends the JSON value v to dst without whitespace between
// tokens and, when fixUTF8 is set, with every invalid UTF-8 byte inside
// strings replaced by U+FFFD, so the result is compact, valid UTF-8 and
// means the same as v. (Outside strings, valid JSON is ASCII.)
func appendCompact(dst, v []byte, fixUTF8 bool) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == '"':
			j := scanString(v, i+1)
			if fixUTF8 {
				dst = appendValidUTF8(dst, v[i:j])
			} else {
				dst = append(dst, v[i:j]...)
			}
			i = j
		case isSpace(c):
			i = skipSpace(v, i+1)
		default:
			// Copy a run of tokens (punctuation, numbers, literals) at once.
			j := i + 1
			for j < len(v) && v[j] != '"' && !isSpace(v[j]) {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
		}
	}
	return dst
}

// appendValidUTF8 appends s to dst with each byte that is not part of a valid
// UTF-8 sequence replaced by U+FFFD, one replacement per byte as a range loop
// over a string sees them, so rune counts agree with utf8.RuneCount.
func appendValidUTF8(dst, s []byte) []byte {
	if utf8.Valid(s) {
		return append(dst, s...)
	}
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return dst
}

// validString returns b as a string with invalid UTF-8 bytes replaced by
// U+FFFD (one per byte).
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(appendValidUTF8(make([]byte, 0, len(b)+len(b)/8), b))
}

// arena hands out byte slices for rewritten items from large shared blocks,
// so that a 100,000-item list costs a few dozen allocations rather than one
// per item. Slices already handed out stay valid when a new block starts.
type arena struct {
	buf []byte
}

const arenaBlock = 1 << 20

// add appends the compact form of v (see appendCompact) and returns it as
// its own slice.
func (a *arena) add(v []byte, fixUTF8 bool) []byte {
	// Compaction only shrinks a value, except that each invalid UTF-8 byte
	// grows to three; append copes with that case by reallocating.
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, max(arenaBlock, len(v)))
	}
	start := len(a.buf)
	a.buf = appendCompact(a.buf, v, fixUTF8)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// addRaw appends v unchanged and returns it as its own slice.
func (a *arena) addRaw(v []byte) []byte {
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, max(arenaBlock, len(v)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
