package memstore

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/store"
)

// searchText returns the text SearchItems matches in an item when no
// fields are given: the same scalar values as [store.SearchableText], each
// followed by a newline.
//
// It scans the JSON instead of decoding it, which makes the first search
// of a large list several times faster. Values come in document order
// rather than in sorted key order; since no search term holds a newline,
// no match spans two values and the order changes no count.
// FuzzScalarText checks the two agree. item must be valid JSON, as every
// stored item is.
//
// Where a decoder would drop values (an object with a repeated key keeps
// only the last) or where checking for that would cost too much (escaped
// keys, objects with many keys), it falls back to decoding.
func searchText(item json.RawMessage) string {
	var sc scanner
	return sc.searchText(item)
}

// scanner holds buffers that searchText reuses from one item to the next.
type scanner struct {
	buf     []byte
	objects [][][2]int
}

// searchText is the function searchText, reusing sc's buffers.
func (sc *scanner) searchText(item json.RawMessage) string {
	if text, ok := sc.scanScalars(item); ok {
		return text
	}
	return store.SearchableText(item, nil)
}

// maxScannedKeys bounds the keys per object that scanScalars checks for
// repeats, one against another.
const maxScannedKeys = 64

// scanScalars implements searchText by scanning, reporting false when the
// item needs decoding instead.
func (sc *scanner) scanScalars(item []byte) (string, bool) {
	b := sc.buf[:0]
	defer func() { sc.buf = b[:0] }()
	// objects holds, for each object open at i, the keys seen so far as
	// offsets into item. Its slices are reused.
	objects := sc.objects[:0]
	defer func() { sc.objects = objects[:0] }()
	for i := 0; i < len(item); {
		switch c := item[i]; {
		case c == '{':
			if len(objects) < cap(objects) {
				objects = objects[:len(objects)+1]
				objects[len(objects)-1] = objects[len(objects)-1][:0]
			} else {
				objects = append(objects, nil)
			}
			i++
		case c == '}':
			// Stored items are valid JSON, but a stray brace must not panic.
			if len(objects) > 0 {
				objects = objects[:len(objects)-1]
			}
			i++
		case c == '"':
			end := stringEnd(item, i)
			// A string followed by a colon is an object key, which never matches.
			j := end
			for j < len(item) && isSpace(item[j]) {
				j++
			}
			if j < len(item) && item[j] == ':' {
				key := item[i+1 : end-1]
				top := len(objects) - 1
				if top < 0 || bytes.IndexByte(key, '\\') >= 0 || len(objects[top]) >= maxScannedKeys {
					return "", false
				}
				for _, k := range objects[top] {
					if bytes.Equal(item[k[0]:k[1]], key) {
						return "", false
					}
				}
				objects[top] = append(objects[top], [2]int{i + 1, end - 1})
				i = j + 1
				continue
			}
			b = appendString(b, item[i:end])
			b = append(b, '\n')
			i = end
		case c == 't':
			b = append(b, "true\n"...)
			i += len("true")
		case c == 'f':
			b = append(b, "false\n"...)
			i += len("false")
		case c == 'n':
			i += len("null")
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(item) && isNumberByte(item[j]) {
				j++
			}
			b = append(b, item[i:j]...)
			b = append(b, '\n')
			i = j
		default: // punctuation and white space
			i++
		}
	}
	return string(b), true
}

// stringEnd returns the offset just past the JSON string starting at i.
func stringEnd(doc []byte, i int) int {
	for k := i + 1; k < len(doc); k++ {
		switch doc[k] {
		case '\\':
			k++
		case '"':
			return k + 1
		}
	}
	return len(doc)
}

// appendString appends the value of the JSON string literal s (with its
// quotes). Literals without escapes and with valid UTF-8 are copied as they
// are; others are decoded as encoding/json does, which also replaces
// invalid UTF-8 with U+FFFD.
func appendString(b, s []byte) []byte {
	body := s[1 : len(s)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return append(b, body...)
	}
	var v string
	if err := json.Unmarshal(s, &v); err != nil {
		return append(b, body...)
	}
	return append(b, v...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}
