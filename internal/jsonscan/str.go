package jsonscan

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// AppendString appends to dst the text of the JSON string literal lit
// (quotes included, nothing around them) as encoding/json decodes it:
// escapes resolved, a lone surrogate escape and each byte of invalid UTF-8
// read as U+FFFD. ok is false, and dst returned unchanged, when lit is not
// one valid literal.
//
// When lit is valid UTF-8, dst may be lit[:0]: the text is then decoded in
// place, since decoding never writes past what it has read.
func AppendString(dst, lit []byte) (out []byte, ok bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return dst, false
	}
	s := scanner{data: lit, dst: dst}
	if s.strText(1) != len(lit) {
		return dst, false
	}
	return s.dst, true
}

// Unquote returns the text of the JSON string literal lit, as
// [AppendString] decodes it; ok is false when lit is not one valid
// literal.
func Unquote(lit []byte) (string, bool) {
	if len(lit) >= 2 && lit[0] == '"' {
		// Most literals are their own text: no escapes, only ASCII.
		body := lit[1 : len(lit)-1]
		plain := true
		for _, c := range body {
			if !plainString[c] {
				plain = false
				break
			}
		}
		if plain && lit[len(lit)-1] == '"' {
			return string(body), true
		}
	}
	text, ok := AppendString(make([]byte, 0, len(lit)), lit)
	if !ok || len(text) == 0 {
		return "", ok
	}
	// text is this call's own buffer and is never written again, so the
	// string can be it rather than a second copy of a large text.
	return unsafe.String(unsafe.SliceData(text), len(text)), true
}

// StringRunes returns the number of runes in the text of the JSON string
// literal lit, without decoding it; ok is false when lit is not one valid
// literal. Each byte of invalid UTF-8 counts as one rune, the U+FFFD it
// decodes to.
func StringRunes(lit []byte) (n int, ok bool) {
	if len(lit) < 2 || lit[0] != '"' {
		return 0, false
	}
	for i := 1; i < len(lit); {
		for i+8 <= len(lit) && plainWord(binary.LittleEndian.Uint64(lit[i:])) {
			i += 8
			n += 8
		}
		if i == len(lit) {
			break
		}
		switch c := lit[i]; {
		case plainString[c]:
			n++
			i++
		case c == '"':
			return n, i == len(lit)-1
		case c == '\\':
			_, k := escape(lit, i)
			if k < 0 {
				return 0, false
			}
			n++
			i += k
		case c < 0x20:
			return 0, false
		default:
			_, size := utf8.DecodeRune(lit[i:])
			n++
			i += size
		}
	}
	return 0, false
}

// AppendValidUTF8 appends s to dst with each byte that is not part of a
// valid UTF-8 sequence replaced by U+FFFD, one replacement per byte as
// encoding/json decodes strings and as a range loop over a string sees
// them, so rune counts agree with utf8.RuneCount.
func AppendValidUTF8(dst, s []byte) []byte {
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
