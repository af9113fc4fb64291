package ingest

// This file holds a JSON validator that accepts exactly what json.Valid
// accepts (FuzzValid checks that they agree), about five times faster,
// and that also reports whether a value is already compact and valid UTF-8.
// encoding/json's scanner calls a function per byte; a large array spends
// most of its parse there, so Parse validates with this instead.

import "encoding/binary"

// maxNesting is encoding/json's nesting limit: deeper values are invalid.
const maxNesting = 10000

// validator checks JSON values in data. After each call to value, space
// tells whether whitespace occurred inside the value (between tokens of a
// container) and high whether a string in it holds a byte of 0x80 or more,
// which may be invalid UTF-8.
type validator struct {
	data  []byte
	space bool
	high  bool
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

// validJSON reports whether data is one JSON value with optional whitespace
// around it, as json.Valid does.
func validJSON(data []byte) bool {
	v := validator{data: data}
	i := v.value(skipSpace(data, 0), 0)
	return i >= 0 && skipSpace(data, i) == len(data)
}

// value validates the value starting at data[i] and returns the index just
// past it, or -1 when it is not valid. depth counts the containers around it.
func (v *validator) value(i, depth int) int {
	d := v.data
	if i >= len(d) {
		return -1
	}
	switch c := d[i]; c {
	case '"':
		return v.str(i + 1)
	case '{':
		return v.object(i+1, depth+1)
	case '[':
		return v.array(i+1, depth+1)
	case 't':
		return v.literal(i, "true")
	case 'f':
		return v.literal(i, "false")
	case 'n':
		return v.literal(i, "null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return v.number(i)
		}
		return -1
	}
}

// ws skips whitespace inside a container, noting that there was some.
func (v *validator) ws(i int) int {
	j := skipSpace(v.data, i)
	if j > i {
		v.space = true
	}
	return j
}

func (v *validator) object(i, depth int) int {
	if depth > maxNesting {
		return -1
	}
	d := v.data
	i = v.ws(i)
	if i < len(d) && d[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return -1
		}
		if i = v.str(i + 1); i < 0 {
			return -1
		}
		if i = v.ws(i); i >= len(d) || d[i] != ':' {
			return -1
		}
		if i = v.value(v.ws(i+1), depth); i < 0 {
			return -1
		}
		if i = v.ws(i); i >= len(d) {
			return -1
		}
		switch d[i] {
		case ',':
			i = v.ws(i + 1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

func (v *validator) array(i, depth int) int {
	if depth > maxNesting {
		return -1
	}
	d := v.data
	i = v.ws(i)
	if i < len(d) && d[i] == ']' {
		return i + 1
	}
	for {
		if i = v.value(i, depth); i < 0 {
			return -1
		}
		if i = v.ws(i); i >= len(d) {
			return -1
		}
		switch d[i] {
		case ',':
			i = v.ws(i + 1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
}

// str validates a string whose contents start at data[i].
func (v *validator) str(i int) int {
	d := v.data
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
			return -1
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(d) {
				return -1
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return -1
				}
				for _, h := range d[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default: // 0x80 and above: UTF-8, valid or not, as json.Valid allows
			v.high = true
			i++
		}
	}
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
func (v *validator) number(i int) int {
	d := v.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		i = skipDigitBytes(d, i+1)
	default:
		return -1
	}
	if i < len(d) && d[i] == '.' {
		j := skipDigitBytes(d, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := skipDigitBytes(d, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func (v *validator) literal(i int, lit string) int {
	d := v.data
	if len(d)-i < len(lit) || string(d[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

func skipDigitBytes(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ValueEnd returns the index just past the JSON value that starts at
// data[i] (no white space before it), or -1 when no valid value starts
// there. It accepts exactly what json.Valid accepts, so a caller can skip a
// value it does not need without decoding it.
func ValueEnd(data []byte, i int) int {
	if i < 0 {
		return -1
	}
	v := validator{data: data}
	return v.value(i, 0)
}
