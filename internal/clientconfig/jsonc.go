package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// apply applies non-overlapping edits to src.
func apply(src []byte, edits []edit) []byte {
	// Sort by start, descending, so earlier offsets stay valid.
	sorted := append([]edit(nil), edits...)
	for i := 1; i < len(sorted); i++ {
		for j := i; j > 0 && sorted[j].start > sorted[j-1].start; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	out := append([]byte(nil), src...)
	for _, e := range sorted {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

// jsonDoc is a parsed JSONC configuration file. The hujson tree gives exact
// byte offsets of every value, so edits splice text into the original bytes
// and everything outside the edited entries stays byte for byte.
type jsonDoc struct {
	src   []byte
	root  hujson.Value
	empty bool // the file was empty or blank: treated as {}
}

// parseJSON parses src as JSONC; path only names the file in errors.
func parseJSON(path string, src []byte) (*jsonDoc, error) {
	d := &jsonDoc{src: src}
	if len(bytes.TrimSpace(src)) == 0 {
		d.empty = true
		d.src = []byte("{}")
	}
	// JSON text is UTF-8 (RFC 8259); the decoder would silently replace
	// invalid bytes, and the manifest could not keep them exactly.
	if !utf8.Valid(d.src) {
		off := 0
		for off < len(d.src) {
			r, n := utf8.DecodeRune(d.src[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		line, col := lineCol(d.src, off)
		return nil, fmt.Errorf("%w: %s: line %d, column %d: invalid UTF-8", ErrParse, path, line, col)
	}
	v, err := hujson.Parse(d.src)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "hujson: ")
		return nil, fmt.Errorf("%w: %s: %s", ErrParse, path, msg)
	}
	// hujson checks the grammar; the standard decoder also checks string
	// contents and escapes. Standardize keeps offsets, so positions match.
	std := v.Clone()
	std.Standardize()
	var anyv any
	if err := json.Unmarshal(std.Pack(), &anyv); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(d.src, int(se.Offset))
			return nil, fmt.Errorf("%w: %s: line %d, column %d: %v", ErrParse, path, line, col, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrParse, path, err)
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, fmt.Errorf("%w: %s: the top level is not a JSON object", ErrParse, path)
	}
	d.root = v
	return d, nil
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(b []byte, off int) (int, int) {
	if off > len(b) {
		off = len(b)
	}
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

// member finds name in obj; nil when absent.
func member(obj *hujson.Object, name string) *hujson.ObjectMember {
	for i := range obj.Members {
		m := &obj.Members[i]
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == name {
			return m
		}
	}
	return nil
}

// lookup follows keys from the root. It returns the deepest object found,
// how many keys it matched, and an error when a key holds a non-object.
func (d *jsonDoc) lookup(keys []string) (*hujson.Value, int, error) {
	cur := &d.root
	for i, k := range keys {
		obj := cur.Value.(*hujson.Object)
		m := member(obj, k)
		if m == nil {
			return cur, i, nil
		}
		if _, ok := m.Value.Value.(*hujson.Object); !ok {
			return nil, i, fmt.Errorf("%w: %q is not an object", ErrShape, strings.Join(keys[:i+1], "."))
		}
		cur = &m.Value
	}
	return cur, len(keys), nil
}

// servers returns the object holding the entries, or nil when absent.
func (d *jsonDoc) servers(keys []string) (*hujson.Object, error) {
	v, n, err := d.lookup(keys)
	if err != nil || n < len(keys) {
		return nil, err
	}
	return v.Value.(*hujson.Object), nil
}

// raw returns the bytes of a value without surrounding space and comments.
func (d *jsonDoc) raw(v *hujson.Value) string { return string(d.src[v.StartOffset:v.EndOffset]) }

// decode decodes a value (which may hold comments) into out.
func decode(v *hujson.Value, out any) error {
	c := v.Clone()
	c.Standardize()
	return json.Unmarshal(c.Pack(), out)
}

// lineIndent returns the leading white space of the line holding off.
func lineIndent(src []byte, off int) string {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	i := start
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[start:i])
}

// onOwnLine reports whether only white space precedes off on its line.
func onOwnLine(src []byte, off int) bool {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return len(bytes.Trim(src[start:off], " \t")) == 0
}

// indentUnit guesses one level of indentation from the document: the indent
// of the first member of the root object, or two spaces.
func (d *jsonDoc) indentUnit() string {
	obj := d.root.Value.(*hujson.Object)
	if len(obj.Members) > 0 {
		if off := obj.Members[0].Name.StartOffset; onOwnLine(d.src, off) {
			if in := lineIndent(d.src, off); in != "" {
				return in
			}
		}
	}
	return "  "
}

// jsonQuote renders s as a JSON string without HTML escaping.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonStrings renders a one-line array of strings.
func jsonStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = jsonQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// rawMember is an object member whose value is JSON text written as is.
type rawMember struct {
	name string
	raw  string
	kids []rawMember // when raw is empty: a nested object rendered by renderObject
}

// renderObject renders members as an object. Multi-line objects put each
// member on its own line at indent+unit and the closing brace at indent.
func renderObject(ms []rawMember, multiline bool, indent, unit string) string {
	if len(ms) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, m := range ms {
		val := m.raw
		if val == "" {
			val = renderObject(m.kids, multiline, indent+unit, unit)
		}
		if multiline {
			b.WriteString("\n" + indent + unit)
		} else if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(jsonQuote(m.name) + ": " + val)
		if i < len(ms)-1 {
			b.WriteString(",")
		}
	}
	if multiline {
		b.WriteString("\n" + indent)
	}
	b.WriteString("}")
	return b.String()
}

// insertEdit returns the edit that adds member m at the end of the object
// v, following the object's layout.
func (d *jsonDoc) insertEdit(v *hujson.Value, m rawMember) edit {
	obj := v.Value.(*hujson.Object)
	unit := d.indentUnit()
	if n := len(obj.Members); n > 0 {
		last := obj.Members[n-1]
		first := obj.Members[0]
		if onOwnLine(d.src, first.Name.StartOffset) {
			in := lineIndent(d.src, last.Name.StartOffset)
			return edit{last.Value.EndOffset, last.Value.EndOffset,
				",\n" + in + jsonQuote(m.name) + ": " + memberValue(m, true, in, unit)}
		}
		return edit{last.Value.EndOffset, last.Value.EndOffset, ", " + jsonQuote(m.name) + ": " + memberValue(m, false, "", unit)}
	}
	open, closing := v.StartOffset+1, v.EndOffset-1
	objIndent := lineIndent(d.src, v.StartOffset)
	text := "\n" + objIndent + unit + jsonQuote(m.name) + ": " + memberValue(m, true, objIndent+unit, unit)
	if len(bytes.TrimSpace(d.src[open:closing])) == 0 {
		return edit{open, closing, text + "\n" + objIndent}
	}
	return edit{open, open, text + ","}
}

func memberValue(m rawMember, multiline bool, indent, unit string) string {
	if m.raw != "" {
		return m.raw
	}
	return renderObject(m.kids, multiline, indent, unit)
}

// removeEdit returns the edit that removes member i of the object v.
func (d *jsonDoc) removeEdit(v *hujson.Value, i int) edit {
	obj := v.Value.(*hujson.Object)
	m := obj.Members[i]
	src := d.src
	commaAfter := func(val hujson.Value) int {
		p := val.EndOffset + len(val.AfterExtra)
		if p < len(src) && src[p] == ',' {
			return p
		}
		return -1
	}
	n := len(obj.Members)
	switch {
	case n == 1:
		end := m.Value.EndOffset
		if c := commaAfter(m.Value); c >= 0 {
			end = c + 1
		}
		open, closing := v.StartOffset+1, v.EndOffset-1
		rest := string(src[open:m.Name.StartOffset]) + string(src[end:closing])
		if strings.TrimSpace(rest) == "" {
			return edit{open, closing, ""}
		}
		return edit{m.Name.StartOffset, end, ""}
	case i == n-1:
		prev := obj.Members[i-1].Value
		return edit{prev.EndOffset + len(prev.AfterExtra), m.Value.EndOffset, ""}
	default:
		start := m.Name.StartOffset
		end := commaAfter(m.Value) + 1
		// Take the whole line when the member sits alone on it.
		j := end
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		if onOwnLine(src, start) && j < len(src) && (src[j] == '\n' || src[j] == '\r') {
			if src[j] == '\r' && j+1 < len(src) && src[j+1] == '\n' {
				j++
			}
			return edit{bytes.LastIndexByte(src[:start], '\n') + 1, j + 1, ""}
		}
		return edit{start, j, ""}
	}
}
