package sqlitestore

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects, as encoding/json does,
// so that hostile input cannot exhaust the stack.
const maxDepth = 10000

// errSyntax is wrapped by every error of the JSON scanner.
var errSyntax = errors.New("invalid JSON")

// appendScalars validates src as one JSON value (surrounding whitespace
// allowed) and appends to dst every scalar value in it, each followed by a
// newline: strings decoded, numbers as written, booleans as true or false.
// Object keys and nulls are left out.
//
// It produces the same lines as [store.SearchableText] without fields, but in
// document order rather than with object keys sorted, and without decoding
// into maps: it is the hot path of ingest, where it runs on every item. Order
// does not matter to anything that consumes it, since search matches terms,
// which never span a newline. Invalid UTF-8 in strings becomes U+FFFD, as
// encoding/json decodes it. With dst nil it only validates.
func appendScalars(dst, src []byte, emit bool) ([]byte, error) {
	s := scanner{src: src, dst: dst, emit: emit}
	s.skipSpace()
	if err := s.value(0); err != nil {
		return dst, err
	}
	s.skipSpace()
	if s.pos != len(s.src) {
		return dst, s.errorf("unexpected %q after the value", s.src[s.pos])
	}
	return s.dst, nil
}

// validJSON reports whether b is one valid JSON value.
func validJSON(b []byte) error {
	_, err := appendScalars(nil, b, false)
	return err
}

// isJSONObject reports whether b is a valid JSON value that is an object.
func isJSONObject(b []byte) bool {
	if validJSON(b) != nil {
		return false
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// topLevelMembers counts the members of a JSON object known to be valid.
func topLevelMembers(b []byte) int {
	n, depth, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ':':
			if depth == 1 {
				n++
			}
		}
	}
	return n
}

type scanner struct {
	src  []byte
	pos  int
	dst  []byte
	emit bool
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) error {
	if s.pos >= len(s.src) {
		return s.errorf("unexpected end of input")
	}
	switch c := s.src[s.pos]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.str(s.emit)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true", true)
	case c == 'f':
		return s.literal("false", true)
	case c == 'n':
		return s.literal("null", false)
	default:
		return s.errorf("unexpected %q", c)
	}
}

func (s *scanner) literal(word string, emit bool) error {
	if len(s.src)-s.pos < len(word) || string(s.src[s.pos:s.pos+len(word)]) != word {
		return s.errorf("invalid literal")
	}
	s.pos += len(word)
	if emit && s.emit {
		s.dst = append(s.dst, word...)
		s.dst = append(s.dst, '\n')
	}
	return nil
}

func (s *scanner) object(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		if s.pos >= len(s.src) || s.src[s.pos] != '"' {
			return s.errorf("want an object key")
		}
		if err := s.str(false); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.src) || s.src[s.pos] != ':' {
			return s.errorf("want ':' after an object key")
		}
		s.pos++
		s.skipSpace()
		if err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.src) {
			return s.errorf("unterminated object")
		}
		switch s.src[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or '}' in an object")
		}
	}
}

func (s *scanner) array(depth int) error {
	if depth > maxDepth {
		return s.errorf("nested too deeply")
	}
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.src) {
			return s.errorf("unterminated array")
		}
		switch s.src[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or ']' in an array")
		}
	}
}

func (s *scanner) number() error {
	start := s.pos
	src := s.src
	if src[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(src) && src[s.pos] == '0':
		s.pos++
	case s.pos < len(src) && src[s.pos] >= '1' && src[s.pos] <= '9':
		for s.pos < len(src) && src[s.pos] >= '0' && src[s.pos] <= '9' {
			s.pos++
		}
	default:
		return s.errorf("invalid number")
	}
	if s.pos < len(src) && src[s.pos] == '.' {
		s.pos++
		if s.pos >= len(src) || src[s.pos] < '0' || src[s.pos] > '9' {
			return s.errorf("invalid number")
		}
		for s.pos < len(src) && src[s.pos] >= '0' && src[s.pos] <= '9' {
			s.pos++
		}
	}
	if s.pos < len(src) && (src[s.pos] == 'e' || src[s.pos] == 'E') {
		s.pos++
		if s.pos < len(src) && (src[s.pos] == '+' || src[s.pos] == '-') {
			s.pos++
		}
		if s.pos >= len(src) || src[s.pos] < '0' || src[s.pos] > '9' {
			return s.errorf("invalid number")
		}
		for s.pos < len(src) && src[s.pos] >= '0' && src[s.pos] <= '9' {
			s.pos++
		}
	}
	if s.emit {
		s.dst = append(s.dst, src[start:s.pos]...)
		s.dst = append(s.dst, '\n')
	}
	return nil
}

// str scans a string starting at its opening quote, appending its decoded
// text and a newline to dst when emit is set.
func (s *scanner) str(emit bool) error {
	s.pos++ // opening quote
	src := s.src
	for {
		// Copy the run of bytes that need no decoding in one go.
		start := s.pos
		for s.pos < len(src) {
			c := src[s.pos]
			if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
			s.pos++
		}
		if emit {
			s.dst = append(s.dst, src[start:s.pos]...)
		}
		if s.pos >= len(src) {
			return s.errorf("unterminated string")
		}
		switch c := src[s.pos]; {
		case c == '"':
			s.pos++
			if emit {
				s.dst = append(s.dst, '\n')
			}
			return nil
		case c < 0x20:
			return s.errorf("control character in a string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(src[s.pos:])
			if emit {
				if r == utf8.RuneError && size == 1 {
					s.dst = utf8.AppendRune(s.dst, utf8.RuneError)
				} else {
					s.dst = append(s.dst, src[s.pos:s.pos+size]...)
				}
			}
			s.pos += size
		default: // backslash
			if err := s.escape(emit); err != nil {
				return err
			}
		}
	}
}

func (s *scanner) escape(emit bool) error {
	src := s.src
	if s.pos+1 >= len(src) {
		return s.errorf("unterminated escape")
	}
	var b byte
	switch src[s.pos+1] {
	case '"', '\\', '/':
		b = src[s.pos+1]
	case 'b':
		b = '\b'
	case 'f':
		b = '\f'
	case 'n':
		b = '\n'
	case 'r':
		b = '\r'
	case 't':
		b = '\t'
	case 'u':
		r, ok := hex4(src[s.pos+2:])
		if !ok {
			return s.errorf("invalid \\u escape")
		}
		s.pos += 6
		if utf16.IsSurrogate(r) {
			// A high surrogate pairs with a following \u low surrogate;
			// anything else is a lone surrogate, which decodes to U+FFFD.
			if r2, ok := lowSurrogate(src[s.pos:]); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					s.pos += 6
					r = dec
				} else {
					r = utf8.RuneError
				}
			} else {
				r = utf8.RuneError
			}
		}
		if emit {
			s.dst = utf8.AppendRune(s.dst, r)
		}
		return nil
	default:
		return s.errorf("invalid escape")
	}
	s.pos += 2
	if emit {
		s.dst = append(s.dst, b)
	}
	return nil
}

// lowSurrogate reads a \uXXXX escape at the start of b.
func lowSurrogate(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	return hex4(b[2:])
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
