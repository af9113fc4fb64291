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

// OffloadJSON is Offload for a tools/call result still in its wire form, for
// proxies: a large result is stored straight from the bytes that carried it,
// without first being decoded into Go values (for a 50 MB result that
// decoding costs ten times its size in memory). It returns the encoded
// result to use instead, and false when result is to be used as it is:
// small, an error, an input request, not a result object at all, or not
// stored.
func (a *Adapter) OffloadJSON(ctx context.Context, req *mcp.CallToolRequest, result []byte) ([]byte, bool) {
	p := a.PrepareJSON(req, result)
	if p == nil {
		return nil, false
	}
	out, err := p.Store(ctx)
	return out, err == nil
}

// Pending is a large tools/call result taken apart from its wire form and
// ready to be stored: PrepareJSON, then Store. In between, the caller can
// let go of the wire bytes, so that a huge message is not held twice while
// it is stored.
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

// PrepareJSON takes result apart when it is to be offloaded, and returns
// nil when it is to be used as it is (see OffloadJSON).
func (a *Adapter) PrepareJSON(req *mcp.CallToolRequest, result []byte) *Pending {
	tool, _ := callInfo(req)
	if a.names[tool] || len(result) <= a.opts.Threshold {
		return nil
	}
	fields, ok := ingest.ObjectSpans(result)
	if !ok || isTrue(result, fields["isError"]) || stringValue(result, fields["resultType"]) == "input_required" {
		return nil
	}
	p := &Pending{a: a, req: req}
	if c, ok := fields["content"]; ok {
		for _, el := range ingest.ArraySpans(result, c) {
			block := result[el.Start:el.End]
			text, kind, err := blockText(block)
			if err != nil {
				return nil
			}
			pt := part{text: -1}
			if kind != textBlock {
				pt.raw = bytes.Clone(block)
			}
			if kind != otherBlock {
				pt.text = len(p.texts)
				p.texts = append(p.texts, text)
				p.chars += utf8.RuneCount(text)
			}
			p.blocks = append(p.blocks, pt)
		}
	}
	if sc, ok := fields["structuredContent"]; ok && string(result[sc.Start:sc.End]) != "null" {
		p.structured = bytes.Clone(result[sc.Start:sc.End])
		p.chars += utf8.RuneCount(p.structured)
	}
	if p.chars <= a.opts.Threshold {
		return nil
	}
	if m, ok := fields["_meta"]; ok {
		p.meta = bytes.Clone(result[m.Start:m.End])
	}
	return p
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

// blockText returns the text a content block puts into the context, decoded,
// and the block's kind.
func blockText(block []byte) (text []byte, kind int, err error) {
	f, ok := ingest.ObjectSpans(block)
	if !ok {
		return nil, otherBlock, errors.New("content block is not an object")
	}
	switch stringValue(block, f["type"]) {
	case "text":
		t, ok := f["text"]
		if !ok {
			return nil, otherBlock, errors.New("text block without text")
		}
		b, err := unquote(block[t.Start:t.End])
		return b, textBlock, err
	case "resource":
		r, ok := f["resource"]
		if !ok {
			return nil, otherBlock, nil
		}
		inner := block[r.Start:r.End]
		rf, ok := ingest.ObjectSpans(inner)
		if !ok {
			return nil, otherBlock, nil
		}
		t, hasText := rf["text"]
		if _, hasBlob := rf["blob"]; hasBlob || !hasText {
			return nil, otherBlock, nil
		}
		b, err := unquote(inner[t.Start:t.End])
		return b, resourceBlock, err
	}
	return nil, otherBlock, nil
}

// unquote decodes a JSON string literal into its bytes, in one allocation
// of at most the literal's size.
func unquote(lit []byte) ([]byte, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return nil, errors.New("not a JSON string")
	}
	s := lit[1 : len(lit)-1]
	out := make([]byte, 0, len(s))
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
