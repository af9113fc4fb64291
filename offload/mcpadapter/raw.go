package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/ingest"
)

// PrepareJSON is the first half of Offload for a tools/call result still in
// its wire form, for proxies: a large result is stored straight from the
// bytes that carried it, without being decoded into Go values (for a 50 MB
// result that decoding costs ten times its size in memory). It returns nil,
// leaving result untouched, when the result is to be used as it is: small,
// an error, an input request, or not a result object at all. Otherwise
// result belongs to the returned Pending, which decodes the text in place,
// and the caller must not use it again; Store does the rest.
func (a *Adapter) PrepareJSON(req *mcp.CallToolRequest, result []byte) *Pending {
	tool, _ := callInfo(req)
	if a.names[tool] || len(result) <= a.opts.Threshold {
		return nil
	}
	fields, ok := ingest.ObjectSpans(result)
	if !ok || isTrue(result, fields["isError"]) || stringValue(result, fields["resultType"]) == "input_required" {
		return nil
	}
	// First measure, touching nothing; decode only once the result is
	// known to be offloaded.
	p := &Pending{a: a, req: req}
	var literals []ingest.Span
	if c, ok := fields["content"]; ok {
		for _, el := range ingest.ArraySpans(result, c) {
			lit, kind, ok := blockText(result, el)
			if !ok {
				return nil
			}
			pt := part{text: -1}
			if kind != textBlock {
				pt.raw = result[el.Start:el.End]
			}
			if kind != otherBlock {
				n, ok := decodedRunes(result[lit.Start:lit.End])
				if !ok {
					return nil
				}
				pt.text = len(literals)
				literals = append(literals, lit)
				p.chars += n
			}
			p.blocks = append(p.blocks, pt)
		}
	}
	if sc, ok := fields["structuredContent"]; ok && string(result[sc.Start:sc.End]) != "null" {
		p.structured = result[sc.Start:sc.End]
		p.chars += utf8.RuneCount(p.structured)
	}
	if p.chars <= a.opts.Threshold {
		return nil
	}
	if m, ok := fields["_meta"]; ok {
		p.meta = result[m.Start:m.End]
	}
	for _, b := range p.blocks {
		if b.text < 0 {
			continue
		}
		lit := result[literals[b.text].Start:literals[b.text].End]
		if b.raw != nil {
			// An embedded resource is passed on in its wire form if
			// storing fails: decode its text into new memory.
			text, _ := unquote(lit)
			p.texts = append(p.texts, text)
			continue
		}
		p.texts = append(p.texts, unquoteInPlace(lit))
	}
	return p
}

// Pending is a large tools/call result taken apart from its wire form and
// ready to be stored (see PrepareJSON). It shares the wire bytes, whose text
// it decoded in place, so a huge result is held once.
type Pending struct {
	a          *Adapter
	req        *mcp.CallToolRequest
	blocks     []part   // content blocks in order
	texts      [][]byte // the decoded text of the blocks that have one
	structured json.RawMessage
	meta       json.RawMessage
	chars      int
}

// part is one content block: its wire form (nil for a text block, which
// is rebuilt from its text) and the index of its text in texts, or -1.
type part struct {
	raw  json.RawMessage
	text int
}

// wireResult is a tools/call result as the adapter writes it.
type wireResult struct {
	Meta              json.RawMessage   `json:"_meta,omitempty"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent any               `json:"structuredContent,omitempty"`
}

// Store stores the result and returns, encoded, the result that replaces
// it. If storing fails, it returns the result rebuilt from its parts (the
// same content, so the call loses nothing) along with the error.
func (p *Pending) Store(ctx context.Context) ([]byte, error) {
	n, err := p.a.store(ctx, p.req, choosePayload(p.texts, p.structured), p.chars)
	if err != nil {
		return p.passThrough(), err
	}
	out := wireResult{Meta: p.meta}
	notice, err := json.Marshal(&mcp.TextContent{Text: n.String()})
	if err != nil {
		return p.passThrough(), err
	}
	out.Content = []json.RawMessage{notice}
	for _, b := range p.blocks {
		if b.text < 0 {
			out.Content = append(out.Content, b.raw)
		}
	}
	if p.structured != nil {
		out.StructuredContent = n
	}
	b, err := json.Marshal(out)
	if err != nil {
		return p.passThrough(), err
	}
	return b, nil
}

// passThrough rebuilds the original result from its parts.
func (p *Pending) passThrough() []byte {
	out := wireResult{Meta: p.meta, Content: make([]json.RawMessage, 0, len(p.blocks))}
	for _, b := range p.blocks {
		raw := b.raw
		if raw == nil {
			raw, _ = json.Marshal(&mcp.TextContent{Text: string(p.texts[b.text])})
		}
		out.Content = append(out.Content, raw)
	}
	if p.structured != nil {
		out.StructuredContent = p.structured
	}
	b, _ := json.Marshal(out)
	return b
}

func isTrue(data []byte, s ingest.Span) bool {
	return s.End > s.Start && string(data[s.Start:s.End]) == "true"
}

func stringValue(data []byte, s ingest.Span) string {
	if s.End <= s.Start || data[s.Start] != '"' {
		return ""
	}
	b, err := unquote(data[s.Start:s.End])
	if err != nil {
		return ""
	}
	return string(b)
}

// Kinds of content block, by what they put into the context.
const (
	otherBlock    = iota // images, audio, links, binary resources
	textBlock            // {"type":"text"}
	resourceBlock        // an embedded resource with text
)

// blockText returns where the string literal of the text a content block
// puts into the context is in data, and the block's kind; ok is false for a
// malformed block.
func blockText(data []byte, block ingest.Span) (lit ingest.Span, kind int, ok bool) {
	b := data[block.Start:block.End]
	f, ok := ingest.ObjectSpans(b)
	if !ok {
		return lit, otherBlock, false
	}
	at := func(s ingest.Span, base int) ingest.Span {
		return ingest.Span{Start: base + s.Start, End: base + s.End}
	}
	switch stringValue(b, f["type"]) {
	case "text":
		t, ok := f["text"]
		if !ok || b[t.Start] != '"' {
			return lit, otherBlock, false
		}
		return at(t, block.Start), textBlock, true
	case "resource":
		r, ok := f["resource"]
		if !ok {
			return lit, otherBlock, true
		}
		rf, ok := ingest.ObjectSpans(b[r.Start:r.End])
		if !ok {
			return lit, otherBlock, true
		}
		t, hasText := rf["text"]
		if _, hasBlob := rf["blob"]; hasBlob || !hasText || b[r.Start+t.Start] != '"' {
			return lit, otherBlock, true
		}
		return at(t, block.Start+r.Start), resourceBlock, true
	}
	return lit, otherBlock, true
}

// decodedRunes counts the runes of a JSON string literal once decoded,
// without decoding it; ok is false when lit is not a valid literal.
func decodedRunes(lit []byte) (n int, ok bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return 0, false
	}
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			return n + utf8.RuneCount(s[i:]), true
		}
		n += utf8.RuneCount(s[i : i+j])
		i += j
		if i+1 >= len(s) {
			return 0, false
		}
		if s[i+1] != 'u' {
			n++
			i += 2
			continue
		}
		r, k := hex4(s, i+2)
		if k < 0 {
			return 0, false
		}
		i += 6
		if utf16.IsSurrogate(r) && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
			if r2, m := hex4(s, i+2); m >= 0 && utf16.DecodeRune(r, r2) != utf8.RuneError {
				i += 6
			}
		}
		n++
	}
	return n, true
}

// unquoteInPlace decodes the JSON string literal lit into lit's own memory
// and returns the decoded bytes. Decoding never lengthens valid UTF-8 (an
// escape is longer than what it stands for), so writing trails reading;
// invalid UTF-8, whose bytes each become a three-byte U+FFFD, is decoded
// into new memory instead. lit must be a valid literal (see decodedRunes).
func unquoteInPlace(lit []byte) []byte {
	var dst []byte
	if utf8.Valid(lit) {
		dst = lit[:0]
	}
	out, _ := unquoteTo(dst, lit)
	return out
}

// unquote decodes a JSON string literal into new memory.
func unquote(lit []byte) ([]byte, error) {
	return unquoteTo(make([]byte, 0, len(lit)), lit)
}

// unquoteTo appends the decoded JSON string literal lit to dst.
func unquoteTo(dst, lit []byte) ([]byte, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, errors.New("not a JSON string")
	}
	s := lit[1 : len(lit)-1]
	out := dst
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			// Copy the run up to the next escape at once.
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			out = appendValid(out, s[i:j])
			i = j
			continue
		}
		if i+1 >= len(s) {
			return nil, errors.New("bad escape")
		}
		switch s[i+1] {
		case '"', '\\', '/':
			out = append(out, s[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(s, i+2)
			if n < 0 {
				return nil, errors.New("bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, m := hex4(s, i+2); i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' && m >= 0 {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return nil, errors.New("bad escape")
		}
		i += 2
	}
	return out, nil
}

// appendValid appends b with each byte of invalid UTF-8 replaced by U+FFFD,
// as encoding/json decodes it.
func appendValid(out, b []byte) []byte {
	if utf8.Valid(b) {
		return append(out, b...)
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = utf8.AppendRune(out, r)
		b = b[n:]
	}
	return out
}

// hex4 decodes the four hex digits at s[i:], or returns n < 0.
func hex4(s []byte, i int) (r rune, n int) {
	if i+4 > len(s) {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(s[i:i+4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}
