// Package ingest turns the bytes of a tool result into workspace content.
//
// [Parse] decides what a result is and reshapes it for a [store.Store]:
//
//   - valid JSON is stored as the value it holds, because MCP servers return
//     JSON as text: an array becomes a list, an object a dict, a string the
//     text it decodes to (or, when that string itself holds a JSON array or
//     object, that array or object), and any other scalar text;
//   - NDJSON (two or more non-empty lines, each one JSON value) becomes a list;
//   - a CSV or TSV table with a header row becomes a list of objects keyed by
//     the header;
//   - anything else is text.
//
// Detection looks at the first non-space byte and, for tables, at most the
// first 64 KiB, before anything is parsed in full, and each input is parsed
// at most once on the path that accepts it. A JSON array is cut into items by
// a structural scan and each item is validated on its own, without decoding
// it, so a 40 MB array costs roughly one validation pass (see
// BenchmarkParseArray).
//
// [InferSchema] and [InferValueSchema] describe lists and dicts with a JSON
// Schema, and [Fields] flattens such a schema into the short field list a
// notice shows the model.
package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
	"unsafe"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
	"github.com/ctxkit/ctxkit/store"
)

// The formats a result can be read as, stored in [store.Workspace.Format].
const (
	FormatJSON   = "json"
	FormatNDJSON = "ndjson"
	FormatCSV    = "csv"
	FormatTSV    = "tsv"
	FormatText   = "text"
)

// ErrTooLarge means a result exceeds a limit in [ParseOptions]. The error
// wrapping it gives the size and the limit.
var ErrTooLarge = errors.New("result too large")

// Result is a parsed tool result, ready to be stored.
type Result struct {
	Shape  store.Shape
	Format string // FormatJSON, FormatNDJSON, FormatCSV, FormatTSV or FormatText
	// Content is what to pass to store.Put. Raw is the input slice itself,
	// or nil for a text that is exactly the input; list items may share
	// memory with it, so the caller must not modify the input afterwards. Items are compact JSON (the original bytes when those
	// already were), and invalid UTF-8 is replaced by U+FFFD everywhere but Raw.
	Content *store.Content
	// Items is the number of list items or dict keys; 0 for text.
	Items int
	// Chars is the size in characters (runes) of the content as stored,
	// matching store.Workspace.Chars: for text it counts Content.Text, which
	// is shorter than the input when a JSON string was decoded; for lists and
	// dicts it counts the input. Each invalid UTF-8 byte counts as one.
	Chars int64
	// RawChars is the size in characters of the input itself.
	RawChars int64
	// Tokens estimates what the input would cost in a model's context; see
	// EstimateTokens.
	Tokens int
	// Schema describes list items (InferSchema) or the dict (InferValueSchema);
	// nil for text.
	Schema json.RawMessage
}

// ParseOptions bounds what Parse accepts. The zero value sets no limits; the
// offload engine sets them from its policy.
type ParseOptions struct {
	// MaxBytes, when positive, is the largest input accepted. It is checked
	// before anything else.
	MaxBytes int64
	// MaxItems, when positive, is the most list items accepted. It is checked
	// while items are cut, so parsing stops at the first item over it. Dicts
	// and text are not bounded by it.
	MaxItems int
	// Owned says the input is handed over: the caller never reads or
	// changes it again, so a text result shares its memory instead of
	// copying it (for a 50 MB text, 50 MB less at the peak).
	Owned bool
}

// Parse reads a tool result with no limits. See [ParseOptions.Parse].
func Parse(raw []byte) (*Result, error) {
	return ParseOptions{}.Parse(raw)
}

// Parse detects the shape and format of raw and builds its content, as the
// package documentation describes. A leading UTF-8 byte order mark is ignored
// (it stays in Content.Raw). Parse fails only with an error wrapping
// ErrTooLarge; any input within the limits is stored, as text if nothing else.
//
// One caveat of deciding early: an input that begins as a JSON array with more
// than MaxItems items is rejected even if it turns out not to be valid JSON
// further on, where it would have been text.
func (o ParseOptions) Parse(raw []byte) (*Result, error) {
	if o.MaxBytes > 0 && int64(len(raw)) > o.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(raw), o.MaxBytes)
	}
	body := bytes.TrimPrefix(raw, []byte("\ufeff"))
	res, err := o.detect(body, true)
	if err != nil {
		return nil, err
	}
	if res == nil {
		if o.Owned && utf8.Valid(body) {
			res = textResultString(unsafe.String(unsafe.SliceData(body), len(body)), FormatText)
		} else {
			res = textResult(body, FormatText)
		}
	}
	res.Content.Raw = raw
	if res.Shape == store.ShapeText && len(body) == len(raw) && res.Content.Text == string(raw) {
		// The text is the input itself: storing it twice would double what
		// a large text costs. The store gives the text back as the raw bytes.
		res.Content.Raw = nil
	}
	res.RawChars = runeCount(raw)
	if res.Shape != store.ShapeText {
		res.Chars = res.RawChars
	}
	res.Tokens = EstimateTokens(raw)
	return res, nil
}

// detect returns the result for body, or nil when body is plain text. With
// fallbacks false only a single JSON array or object is accepted; that is how
// a JSON string holding JSON is unwrapped, one level deep.
func (o ParseOptions) detect(body []byte, fallbacks bool) (*Result, error) {
	data := jsonscan.TrimSpace(body)
	if len(data) == 0 {
		return nil, nil
	}
	switch data[0] {
	case '[':
		items, ok, err := o.splitArray(data)
		if err != nil {
			return nil, err
		}
		if ok {
			return listResult(items, FormatJSON), nil
		}
	case '{':
		if res := dictResult(data); res != nil {
			return res, nil
		}
	default:
		if fallbacks && startsScalar(data[0]) && jsonscan.Valid(data) {
			return o.scalarResult(data)
		}
	}
	if !fallbacks {
		return nil, nil
	}
	if startsValue(data[0]) {
		items, ok, err := o.splitLines(data)
		if err != nil {
			return nil, err
		}
		if ok {
			return listResult(items, FormatNDJSON), nil
		}
	}
	items, format, err := o.parseTable(body)
	if err != nil {
		return nil, err
	}
	if items != nil {
		return listResult(items, format), nil
	}
	return nil, nil
}

// startsValue reports whether c can begin a JSON value.
func startsValue(c byte) bool {
	return c == '[' || c == '{' || startsScalar(c)
}

// startsScalar reports whether c can begin a JSON string, number or literal.
func startsScalar(c byte) bool {
	return c == '"' || c == '-' || ('0' <= c && c <= '9') || c == 't' || c == 'f' || c == 'n'
}

// scalarResult stores a JSON scalar as text: a string as the text it decodes
// to, anything else as its literal. A string that holds a JSON array or
// object (a result encoded twice) is stored as that array or object.
func (o ParseOptions) scalarResult(data []byte) (*Result, error) {
	if data[0] != '"' {
		return textResult(data, FormatJSON), nil
	}
	s, ok := jsonscan.Unquote(data)
	if !ok {
		// Unreachable for input jsonscan.Valid accepted; stay safe regardless.
		return textResult(data, FormatText), nil
	}
	if inner := jsonscan.TrimSpace([]byte(s)); len(inner) > 0 && (inner[0] == '[' || inner[0] == '{') {
		res, err := o.detect(inner, false)
		if err != nil || res != nil {
			return res, err
		}
	}
	res := textResult(nil, FormatJSON)
	res.Content.Text = s
	res.Chars = int64(utf8.RuneCountInString(s))
	return res, nil
}

// runeCount returns utf8.RuneCount(b), faster for valid UTF-8: there every
// byte but a continuation byte (10xxxxxx) starts a rune.
func runeCount(b []byte) int64 {
	if !utf8.Valid(b) {
		return int64(utf8.RuneCount(b))
	}
	const highs = 0x8080808080808080
	cont := 0
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// Continuation bytes have bit 7 set and bit 6 clear.
		cont += bits.OnesCount64(w & ^(w << 1) & highs)
	}
	for ; i < len(b); i++ {
		if b[i]&0xC0 == 0x80 {
			cont++
		}
	}
	return int64(len(b) - cont)
}

func textResult(b []byte, format string) *Result {
	return textResultString(validString(b), format)
}

// textResultString is textResult for a text already valid UTF-8.
func textResultString(text, format string) *Result {
	return &Result{
		Shape:   store.ShapeText,
		Format:  format,
		Content: &store.Content{Text: text},
		Chars:   int64(utf8.RuneCountInString(text)),
	}
}

func listResult(items []json.RawMessage, format string) *Result {
	if items == nil {
		items = []json.RawMessage{}
	}
	return &Result{
		Shape:   store.ShapeList,
		Format:  format,
		Content: &store.Content{Items: items},
		Items:   len(items),
		Schema:  InferSchema(items),
	}
}

// dictResult returns the result for a JSON object, or nil when data is not
// one valid JSON object.
func dictResult(data []byte) *Result {
	// The distinct keys, as a decoder keeping the last of repeated keys
	// sees them.
	keys, ok := jsonscan.ObjectSpans(data)
	if !ok {
		return nil
	}
	value, _ := validCompact(data, nil)
	return &Result{
		Shape:   store.ShapeDict,
		Format:  FormatJSON,
		Content: &store.Content{Value: value},
		Items:   len(keys),
		Schema:  InferValueSchema(value),
	}
}

// splitArray cuts the JSON array data (whitespace-trimmed, starting with '[')
// into items, validating each on its own. ok is false when data is not
// exactly one valid JSON array. Items that are already compact and valid
// UTF-8 are subslices of data; the others are compacted into an arena.
func (o ParseOptions) splitArray(data []byte) (items []json.RawMessage, ok bool, err error) {
	var a arena
	i := jsonscan.SkipSpace(data, 1)
	if i < len(data) && data[i] == ']' {
		return []json.RawMessage{}, jsonscan.SkipSpace(data, i+1) == len(data), nil
	}
	for {
		end, l := jsonscan.CheckValue(data, i, 1)
		if end < 0 {
			return nil, false, nil
		}
		if o.MaxItems > 0 && len(items) == o.MaxItems {
			return nil, false, fmt.Errorf("%w: more than %d items", ErrTooLarge, o.MaxItems)
		}
		span := data[i:end]
		if fix := l.High && !utf8.Valid(span); l.Space || fix {
			span = a.add(span, fix)
		}
		items = append(items, span)
		j := jsonscan.SkipSpace(data, end)
		if j == len(data) {
			return nil, false, nil
		}
		switch data[j] {
		case ',':
			i = jsonscan.SkipSpace(data, j+1)
		case ']':
			return items, jsonscan.SkipSpace(data, j+1) == len(data), nil
		default:
			return nil, false, nil
		}
	}
}

// validCompact validates data (whitespace-trimmed) as one JSON value and
// returns it compact and valid UTF-8: data itself when it already is.
func validCompact(data []byte, a *arena) (json.RawMessage, bool) {
	end, l := jsonscan.CheckValue(data, 0, 0)
	if end != len(data) {
		return nil, false
	}
	if fix := l.High && !utf8.Valid(data); l.Space || fix {
		if a == nil {
			return jsonscan.AppendCompact(make([]byte, 0, len(data)), data, fix), true
		}
		return a.add(data, fix), true
	}
	return data, true
}

// splitLines reads data as NDJSON: ok is true when it has at least two
// non-empty lines and each is one JSON value. Lines may end in CRLF.
func (o ParseOptions) splitLines(data []byte) (items []json.RawMessage, ok bool, err error) {
	var a arena
	for rest := data; len(rest) > 0; {
		line := rest
		if k := bytes.IndexByte(rest, '\n'); k >= 0 {
			line, rest = rest[:k], rest[k+1:]
		} else {
			rest = nil
		}
		line = jsonscan.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		item, ok := validCompact(line, &a)
		if !ok {
			return nil, false, nil
		}
		if o.MaxItems > 0 && len(items) == o.MaxItems {
			return nil, false, fmt.Errorf("%w: more than %d items", ErrTooLarge, o.MaxItems)
		}
		items = append(items, item)
	}
	return items, len(items) >= 2, nil
}
