package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ctxkit/ctxkit/internal/ingest"
	"github.com/ctxkit/ctxkit/store"
)

// Bounds of a notice's JSON, whatever the payload.
const (
	maxNoticeText = 1500
	maxNoticeList = 2500
)

// Notice is what the model sees instead of a stored result: enough to decide
// how to explore it, never more than a couple of thousand characters.
type Notice struct {
	StoredResult string      `json:"stored_result"`
	Tool         string      `json:"tool,omitempty"`
	Shape        store.Shape `json:"shape"`
	Chars        int64       `json:"chars"`
	ApproxTokens int         `json:"approx_tokens"`
	Items        *int        `json:"items,omitempty"`
	Fields       Fields      `json:"fields,omitempty"`
	FieldsMore   int         `json:"more_fields,omitempty"`
	Preview      any         `json:"preview"`
	HowToExplore string      `json:"how_to_explore"`
	ExpiresAt    string      `json:"expires_at,omitempty"`
}

// Field is one field of a stored list's items or of a stored dict: a dot
// path and its JSON type, such as "author.name": "string".
type Field struct {
	Path string
	Type string
}

// Fields lists field paths with their types; it marshals as one JSON object
// that keeps the fields' order.
type Fields []Field

// MarshalJSON writes {"path": "type", ...} in order.
func (f Fields) MarshalJSON() ([]byte, error) {
	o := make(orderedObject, len(f))
	for i, fd := range f {
		o[i] = member{fd.Path, fd.Type}
	}
	return o.MarshalJSON()
}

func (n *Notice) setFields(schema json.RawMessage) {
	fields, omitted := ingest.Fields(schema, 40)
	n.Fields, n.FieldsMore = nil, omitted
	for _, f := range fields {
		n.Fields = append(n.Fields, Field{Path: f.Path, Type: f.Type})
	}
}

// String returns the notice as compact JSON.
func (n *Notice) String() string {
	b, _ := marshal(n)
	return string(b)
}

// shapeTools names the exploration tools suggested for each shape, the most
// useful first.
var shapeTools = map[store.Shape][]string{
	store.ShapeList: {"result_search", "result_pipe", "result_paginate", "result_get_item", "result_field_values"},
	store.ShapeDict: {"result_get_keys", "result_get_value"},
	store.ShapeText: {"result_search_in_text", "result_read_page", "result_get_length"},
}

func (e *Engine) notice(ctx context.Context, ws *store.Workspace) (*Notice, error) {
	n := &Notice{
		StoredResult: ws.ID,
		Tool:         ws.Producer,
		Shape:        ws.Shape,
		Chars:        ws.Chars,
		ApproxTokens: ws.Tokens,
		HowToExplore: howToExplore(ws),
	}
	if !ws.ExpiresAt.IsZero() {
		n.ExpiresAt = ws.ExpiresAt.UTC().Format(time.RFC3339)
	}
	limit := maxNoticeText
	var previewItems []json.RawMessage
	switch ws.Shape {
	case store.ShapeList:
		limit = maxNoticeList
		items := ws.Items
		n.Items = &items
		n.setFields(ws.Schema)
		var err error
		if previewItems, err = e.store.Items(ctx, ws.ID, 0, 3); err != nil {
			return nil, fmt.Errorf("preview workspace %q: %w", ws.ID, err)
		}
	case store.ShapeDict:
		limit = maxNoticeList
		n.setFields(ws.Schema)
		v, err := e.store.Value(ctx, ws.ID)
		if err != nil {
			return nil, fmt.Errorf("preview workspace %q: %w", ws.ID, err)
		}
		previewItems = []json.RawMessage{v}
	default:
		text, err := e.store.TextSlice(ctx, ws.ID, 0, 600)
		if err != nil {
			return nil, fmt.Errorf("preview workspace %q: %w", ws.ID, err)
		}
		n.Preview = text
	}
	// Shrink until the notice fits its bound: shorter strings, then fewer
	// items and fields, then a bare preview.
	for _, cut := range []int{120, 60, 30, 12} {
		for keep := len(previewItems); keep >= 0; keep-- {
			if ws.Shape == store.ShapeText {
				n.Preview = cutString(n.Preview.(string), cut*5)
			} else {
				n.Preview = previewValues(previewItems[:keep], cut, ws.Shape == store.ShapeDict)
			}
			if len([]rune(n.String())) <= limit {
				return n, nil
			}
			if ws.Shape == store.ShapeText {
				break
			}
		}
	}
	for len(n.Fields) > 0 && len([]rune(n.String())) > limit {
		n.FieldsMore++
		n.Fields = n.Fields[:len(n.Fields)-1]
	}
	if len(n.String()) > limit {
		n.Preview = ""
	}
	return n, nil
}

// previewValues decodes items and cuts their long strings and collections so
// that a few of them fit a notice. Objects keep their keys' order.
func previewValues(items []json.RawMessage, cut int, single bool) any {
	out := make([]any, 0, len(items))
	for _, raw := range items {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		v, err := decodeShrunk(dec, cut, 0)
		if err != nil {
			continue
		}
		out = append(out, v)
	}
	if single {
		if len(out) == 0 {
			return nil
		}
		return out[0]
	}
	return out
}

// decodeShrunk reads one JSON value from dec, cutting strings to cut runes,
// collections to three members and nesting to two levels.
func decodeShrunk(dec *json.Decoder, cut, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		if s, isStr := tok.(string); isStr {
			return cutString(s, cut), nil
		}
		return tok, nil
	}
	var obj orderedObject
	var arr []any
	n := 0
	for dec.More() {
		var key string
		if delim == '{' {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ = kt.(string)
		}
		v, err := decodeShrunk(dec, cut, depth+1)
		if err != nil {
			return nil, err
		}
		n++
		if depth >= 2 || (delim == '[' && n > 3) {
			continue // counted, not shown
		}
		if delim == '{' {
			obj = append(obj, member{key, v})
		} else {
			arr = append(arr, v)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	switch {
	case delim == '{' && depth >= 2:
		return "{" + plural(int64(n), "key") + "}", nil
	case delim == '{':
		return obj, nil
	case depth >= 2:
		return "[" + plural(int64(n), "item") + "]", nil
	case n > 3:
		return append(arr, fmt.Sprintf("… %d more", n-3)), nil
	}
	if arr == nil {
		arr = []any{}
	}
	return arr, nil
}

type member struct {
	key   string
	value any
}

// orderedObject is a JSON object that keeps its keys' order.
type orderedObject []member

// MarshalJSON writes the members in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// cutString shortens s to at most n runes, marking the cut.
func cutString(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// howToExplore is the one sentence that tells the model what it has and the
// exact calls that fit, with the id filled in.
func howToExplore(ws *store.Workspace) string {
	var b strings.Builder
	if ws.Type == savedWorkspaceType {
		fmt.Fprintf(&b, "Saved the pipeline's result (%s chars) as workspace '%s'. Explore it: ", thousands(ws.Chars), ws.ID)
	} else {
		fmt.Fprintf(&b, "Too large to show in full (%s chars); stored as workspace '%s'. ", thousands(ws.Chars), ws.ID)
	}
	if ws.Type == savedWorkspaceType {
	} else if ws.Producer != "" {
		fmt.Fprintf(&b, "Explore it instead of calling %s again: ", ws.Producer)
	} else {
		b.WriteString("Explore it: ")
	}
	id := strconv.Quote(ws.ID)
	switch ws.Shape {
	case store.ShapeList:
		fmt.Fprintf(&b, "result_search(%s, query) finds items; result_pipe(%s, steps) filters, sorts, groups and counts; result_paginate(%s, page) pages through its %s.", id, id, id, plural(int64(ws.Items), "item"))
	case store.ShapeDict:
		fmt.Fprintf(&b, "result_get_keys(%s) lists its keys; result_get_value(%s, key) reads one value (dot paths work).", id, id)
	default:
		pages := (ws.Chars + defaultCharsPerPage - 1) / defaultCharsPerPage
		fmt.Fprintf(&b, "result_search_in_text(%s, query) finds passages; result_read_page(%s, page) reads it page by page (%s).", id, id, plural(max(pages, 1), "page"))
	}
	b.WriteString(" ")
	b.WriteString(keptFor(ws.TTL))
	return b.String()
}

func keptFor(ttl time.Duration) string {
	if ttl <= 0 {
		return "Kept until dropped."
	}
	return "Kept for " + humanDuration(ttl) + "."
}

// humanDuration writes d the way a person would say it: "1 hour",
// "90 minutes" becomes "1 hour 30 minutes".
func humanDuration(d time.Duration) string {
	unit := func(n int64, name string) string {
		if n == 1 {
			return "1 " + name
		}
		return strconv.FormatInt(n, 10) + " " + name + "s"
	}
	var parts []string
	if days := int64(d / (24 * time.Hour)); days > 0 {
		parts = append(parts, unit(days, "day"))
		d -= time.Duration(days) * 24 * time.Hour
	}
	if h := int64(d / time.Hour); h > 0 {
		parts = append(parts, unit(h, "hour"))
		d -= time.Duration(h) * time.Hour
	}
	if m := int64(d / time.Minute); m > 0 {
		parts = append(parts, unit(m, "minute"))
		d -= time.Duration(m) * time.Minute
	}
	if len(parts) == 0 {
		parts = append(parts, unit(max(int64(d/time.Second), 1), "second"))
	}
	return strings.Join(parts, " ")
}

// plural writes "1 page", "12 pages", "1,024 items".
func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return thousands(n) + " " + unit + "s"
}

// thousands formats n with comma separators: 519810 → "519,810".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Notice returns the notice of a workspace visible in ctx's session, as the
// model saw it when the result was stored.
func (e *Engine) Notice(ctx context.Context, id string) (*Notice, error) {
	ws, err := e.Workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.notice(ctx, ws)
}
