// Package jsonscan reads JSON text without decoding it into Go values. It
// accepts exactly what encoding/json accepts: [Valid] agrees with
// json.Valid, nesting limit included, and string literals decode as
// encoding/json decodes them (escapes resolved, a lone surrogate and each
// byte of invalid UTF-8 read as U+FFFD).
//
// On top of the validator it finds where values end ([ValueEnd],
// [CheckValue]), lists the members of an object and the elements of an
// array as spans of the input ([Members], [ObjectSpans], [ArraySpans]),
// decodes string literals ([AppendString], [Unquote], [StringRunes]),
// writes them ([AppendQuote], [QuoteLen]), rewrites values compactly
// ([AppendCompact]) and extracts the text that search matches in an item
// ([AppendScalars]).
//
// An object that repeats a key means what encoding/json makes of it: the
// last value wins. [ObjectSpans] and [AppendScalars] follow that rule;
// [Members] lists every member, for a caller that keeps key order.
//
// It imports only the standard library, so that every part of ctxkit that
// reads JSON text, from ingest to the stores and the MCP adapter, shares
// one scanner.
package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDepth is encoding/json's nesting limit: a value with arrays and
// objects nested deeper is invalid.
const MaxDepth = 10000

// ErrSyntax is wrapped by every error that reports invalid JSON.
var ErrSyntax = errors.New("invalid JSON")

// IsSpace reports whether c is JSON's insignificant whitespace.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && IsSpace(data[i]) {
		i++
	}
	return i
}

// TrimSpace removes JSON whitespace from both ends of data.
func TrimSpace(data []byte) []byte {
	i := SkipSpace(data, 0)
	j := len(data)
	for j > i && IsSpace(data[j-1]) {
		j--
	}
	return data[i:j]
}

// Valid reports whether data is one JSON value with optional whitespace
// around it, as json.Valid does.
func Valid(data []byte) bool {
	s := scanner{data: data}
	i := s.value(SkipSpace(data, 0), 0)
	return i >= 0 && SkipSpace(data, i) == len(data)
}

// Validate is [Valid] with an error wrapping [ErrSyntax] that says where
// the input stops being valid.
func Validate(data []byte) error {
	s := scanner{data: data}
	return s.whole()
}

// Layout tells what a valid value holds besides its tokens, so that a
// caller can tell whether it is already compact and valid UTF-8.
type Layout struct {
	// Space: whitespace occurs between the tokens of an array or object.
	Space bool
	// High: a string holds a byte of 0x80 or more, which may be invalid
	// UTF-8 (json.Valid accepts it; decoding reads it as U+FFFD).
	High bool
}

// CheckValue validates the JSON value that starts at data[i] (no
// whitespace before it), nested inside depth arrays and objects, and
// returns the index just past it, or -1 when no valid value starts there.
// l describes the value.
func CheckValue(data []byte, i, depth int) (end int, l Layout) {
	if i < 0 {
		return -1, l
	}
	s := scanner{data: data}
	end = s.value(i, depth)
	return end, Layout{Space: s.space, High: s.high}
}

// ValueEnd returns the index just past the JSON value that starts at
// data[i] (no whitespace before it), or -1 when no valid value starts
// there, so that a caller can skip a value without decoding it.
func ValueEnd(data []byte, i int) int {
	end, _ := CheckValue(data, i, 0)
	return end
}

// AppendScalars validates src as one JSON value (surrounding whitespace
// allowed) and appends to dst the text that search matches in it: every
// scalar at any depth, each followed by a newline, in document order.
// Strings are decoded, numbers kept as written, booleans written true or
// false; nulls and object keys are left out. A key that an object repeats
// contributes only its last value, which is all a decoder keeps. On
// invalid input it returns dst unchanged and an error wrapping ErrSyntax.
// A loop over many values should use a [Scalars] instead.
func AppendScalars(dst, src []byte) ([]byte, error) {
	var sc Scalars
	return sc.Append(dst, src)
}

// Scalars is [AppendScalars] with memory kept from one call to the next,
// which saves allocations in a loop over many items. The zero value is
// ready to use; a Scalars must not be used by two goroutines at once. It
// refers to the last value it read until the next call.
type Scalars struct {
	members []member
	scratch []byte
}

// Append is [AppendScalars].
func (sc *Scalars) Append(dst, src []byte) ([]byte, error) {
	s := scanner{data: src, emit: true, dst: dst, members: sc.members[:0], scratch: sc.scratch[:0]}
	err := s.whole()
	sc.members, sc.scratch = s.members[:0], s.scratch[:0]
	if err != nil {
		return dst, err
	}
	return s.dst, nil
}

// scanner validates JSON text and, with emit, appends the scalars it meets
// to dst. After a call to value, space tells whether whitespace occurred
// inside the value and high whether a string in it holds a byte of 0x80
// or more.
type scanner struct {
	data  []byte
	space bool
	high  bool
	errAt int // where validation failed

	emit    bool
	dst     []byte
	esc     bool     // a string had an escape; reset by the caller
	members []member // the members of the objects open, outermost first
	scratch []byte   // decoded keys, to compare escaped ones
}

// member is an object member seen while emitting scalars.
type member struct {
	key      []byte // the key's literal without its quotes
	plain    bool   // the key reads as its bytes: no escapes, valid UTF-8
	dead     bool   // a later member repeats the key
	from, to int    // where the member's scalars are in dst
}

// whole scans data as one value with optional whitespace around it.
func (s *scanner) whole() error {
	i := s.value(SkipSpace(s.data, 0), 0)
	if i >= 0 {
		if i = SkipSpace(s.data, i); i == len(s.data) {
			return nil
		}
		s.errAt = i
	}
	if s.errAt >= len(s.data) {
		return fmt.Errorf("%w: unexpected end of input", ErrSyntax)
	}
	return fmt.Errorf("%w at offset %d (%q)", ErrSyntax, s.errAt, s.data[s.errAt])
}

// fail records that validation failed at i and returns -1.
func (s *scanner) fail(i int) int {
	s.errAt = i
	return -1
}

// plainString marks the bytes that may stand in a JSON string as they are
// and need no further look: not a quote, backslash, control character or
// byte of 0x80 or more.
var plainString = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// value validates the value starting at data[i] and returns the index just
// past it, or -1 when it is not valid. depth counts the containers around it.
func (s *scanner) value(i, depth int) int {
	d := s.data
	if i >= len(d) {
		return s.fail(i)
	}
	switch c := d[i]; c {
	case '"':
		if !s.emit {
			return s.str(i + 1)
		}
		end := s.strText(i + 1)
		if end >= 0 {
			s.dst = append(s.dst, '\n')
		}
		return end
	case '{':
		if !s.emit {
			return s.object(i+1, depth+1)
		}
		base := len(s.members)
		end := s.object(i+1, depth+1)
		s.members = s.members[:base] // drop the object's members
		return end
	case '[':
		return s.array(i+1, depth+1)
	case 't':
		return s.literal(i, "true")
	case 'f':
		return s.literal(i, "false")
	case 'n':
		return s.literal(i, "null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return s.number(i)
		}
		return s.fail(i)
	}
}

// ws skips whitespace inside a container, noting that there was some.
func (s *scanner) ws(i int) int {
	j := SkipSpace(s.data, i)
	if j > i {
		s.space = true
	}
	return j
}

func (s *scanner) object(i, depth int) int {
	if depth > MaxDepth {
		return s.fail(i - 1)
	}
	d := s.data
	i = s.ws(i)
	if i < len(d) && d[i] == '}' {
		return i + 1
	}
	// When emitting, the object's members are s.members[base:], so that
	// the scalars of a key that comes again can be dropped.
	base := len(s.members)
	var index map[string]int // key to member, for objects with many keys
	for {
		if i >= len(d) || d[i] != '"' {
			return s.fail(i)
		}
		key := i + 1
		high := s.high
		s.high, s.esc = false, false
		if i = s.str(key); i < 0 {
			return -1
		}
		keyEnd := i - 1
		plain := !s.esc && (!s.high || utf8.Valid(d[key:keyEnd]))
		s.high = s.high || high
		if i = s.ws(i); i >= len(d) || d[i] != ':' {
			return s.fail(i)
		}
		from := len(s.dst)
		if i = s.value(s.ws(i+1), depth); i < 0 {
			return -1
		}
		if s.emit {
			index = s.endMember(base, member{key: d[key:keyEnd], plain: plain, from: from, to: len(s.dst)}, index)
		}
		if i = s.ws(i); i >= len(d) {
			return s.fail(i)
		}
		switch d[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return i + 1
		default:
			return s.fail(i)
		}
	}
}

// manyKeys is the number of members from which an object's keys are
// looked up in a map rather than compared one by one.
const manyKeys = 32

// endMember adds m, whose scalars are dst[m.from:m.to], to the members of
// its object, s.members[base:]. When an earlier member has the same key,
// its scalars are removed from dst, since a decoder keeps only the last
// value of a repeated key. index maps keys to members once the object has
// many; the updated index is returned.
func (s *scanner) endMember(base int, m member, index map[string]int) map[string]int {
	ms := s.members[base:]
	prev := -1
	if index != nil {
		if k, ok := index[s.keyText(&m)]; ok {
			prev = k
		}
	} else {
		for k := range ms {
			if !ms[k].dead && s.sameKey(&ms[k], &m) {
				prev = k
				break
			}
		}
	}
	if prev >= 0 {
		p := &ms[prev]
		cut := p.to - p.from
		s.dst = append(s.dst[:p.from], s.dst[p.to:]...)
		for k := prev + 1; k < len(ms); k++ {
			ms[k].from -= cut
			ms[k].to -= cut
		}
		m.from -= cut
		m.to -= cut
		p.dead = true
	}
	s.members = append(s.members, m)
	ms = s.members[base:]
	switch {
	case index != nil:
		index[s.keyText(&m)] = len(ms) - 1
	case len(ms) == manyKeys:
		index = make(map[string]int, 2*manyKeys)
		for k := range ms {
			if !ms[k].dead {
				index[s.keyText(&ms[k])] = k
			}
		}
	}
	return index
}

// sameKey reports whether two members' keys decode to the same text.
func (s *scanner) sameKey(a, b *member) bool {
	if string(a.key) == string(b.key) {
		return true
	}
	if a.plain && b.plain {
		return false
	}
	return s.keyText(a) == s.keyText(b)
}

// keyText returns a member's key decoded.
func (s *scanner) keyText(m *member) string {
	if m.plain {
		return string(m.key)
	}
	s.scratch = s.scratch[:0]
	s.scratch = append(s.scratch, '"')
	s.scratch = append(s.scratch, m.key...)
	s.scratch = append(s.scratch, '"')
	text, _ := AppendString(nil, s.scratch)
	return string(text)
}

func (s *scanner) array(i, depth int) int {
	if depth > MaxDepth {
		return s.fail(i - 1)
	}
	d := s.data
	i = s.ws(i)
	if i < len(d) && d[i] == ']' {
		return i + 1
	}
	for {
		if i = s.value(i, depth); i < 0 {
			return -1
		}
		if i = s.ws(i); i >= len(d) {
			return s.fail(i)
		}
		switch d[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			return i + 1
		default:
			return s.fail(i)
		}
	}
}

// str validates a string whose contents start at data[i] (just after the
// opening quote) and returns the index just past its closing quote, or -1.
// It notes escapes in esc and bytes of 0x80 and above in high.
func (s *scanner) str(i int) int {
	d := s.data
	for {
		// Skip eight plain bytes at a time while no byte of the word is a
		// quote, a backslash, a control character or 0x80 and above.
		for i+8 <= len(d) && plainWord(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		for i < len(d) && plainString[d[i]] {
			i++
		}
		if i >= len(d) {
			return s.fail(i)
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			_, n := escape(d, i)
			if n < 0 {
				return s.fail(i)
			}
			s.esc = true
			i += n
		case c < 0x20:
			return s.fail(i)
		default: // 0x80 and above: UTF-8, valid or not, as json.Valid allows
			s.high = true
			i++
		}
	}
}

// strText is str appending the string's text to dst, decoded.
// Decoding never writes more than it has read, except for invalid UTF-8
// (one byte becomes the three of U+FFFD), so dst may share memory with
// data behind the read position.
func (s *scanner) strText(i int) int {
	d := s.data
	for {
		start := i
		for i+8 <= len(d) && plainWord(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		for i < len(d) && plainString[d[i]] {
			i++
		}
		s.dst = append(s.dst, d[start:i]...)
		if i >= len(d) {
			return s.fail(i)
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			r, n := escape(d, i)
			if n < 0 {
				return s.fail(i)
			}
			s.dst = utf8.AppendRune(s.dst, r)
			i += n
		case c < 0x20:
			return s.fail(i)
		default:
			s.high = true
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				s.dst = utf8.AppendRune(s.dst, utf8.RuneError)
			} else {
				s.dst = append(s.dst, d[i:i+size]...)
			}
			i += size
		}
	}
}

// escape decodes the escape sequence at d[i] (a backslash) and returns the
// rune it stands for and its length in bytes, or n < 0 when it is not
// valid. A \u escape of a high surrogate followed by one of a low
// surrogate is one rune; any other surrogate reads as U+FFFD.
func escape(d []byte, i int) (r rune, n int) {
	if i+1 >= len(d) {
		return 0, -1
	}
	switch d[i+1] {
	case '"', '\\', '/':
		return rune(d[i+1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(d, i+2)
		if !ok {
			return 0, -1
		}
		if !isSurrogate(r) {
			return r, 6
		}
		if i+7 < len(d) && d[i+6] == '\\' && d[i+7] == 'u' {
			if r2, ok := hex4(d, i+8); ok && r < 0xdc00 && 0xdc00 <= r2 && r2 < 0xe000 {
				return (r-0xd800)<<10 | (r2 - 0xdc00) + 0x10000, 12
			}
		}
		return utf8.RuneError, 6
	}
	return 0, -1
}

func isSurrogate(r rune) bool { return 0xd800 <= r && r < 0xe000 }

// hex4 decodes the four hex digits at d[i:].
func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// plainWord reports whether none of the eight bytes in w needs a look in a
// string. Each test sets a byte's high bit for a byte it matches (and maybe
// for bytes above a match, which only sends the word to the byte loop).
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	less := (w - ones*0x20) & ^w & highs // bytes below 0x20
	return (less | hasZero(w^(ones*'"')) | hasZero(w^(ones*'\\')) | w&highs) == 0
}

// number validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number(i int) int {
	d := s.data
	start := i
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i = skipDigits(d, i+1)
	default:
		return s.fail(i)
	}
	if i < len(d) && d[i] == '.' {
		j := skipDigits(d, i+1)
		if j == i+1 {
			return s.fail(j)
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := skipDigits(d, i)
		if j == i {
			return s.fail(j)
		}
		i = j
	}
	if s.emit {
		s.dst = append(s.dst, d[start:i]...)
		s.dst = append(s.dst, '\n')
	}
	return i
}

func (s *scanner) literal(i int, lit string) int {
	d := s.data
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return s.fail(i)
	}
	if s.emit && lit != "null" {
		s.dst = append(s.dst, lit...)
		s.dst = append(s.dst, '\n')
	}
	return i + len(lit)
}

func skipDigits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}
