package mcpadapter

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxkit/ctxkit/internal/jsonscan"
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
	fields, ok := jsonscan.ObjectSpans(result)
	if !ok || isTrue(result, fields["isError"]) || stringValue(result, fields["resultType"]) == "input_required" {
		return nil
	}
	// First measure, touching nothing; decode only once the result is
	// known to be offloaded.
	p := &Pending{a: a, req: req}
	var literals []jsonscan.Span
	if c, ok := fields["content"]; ok {
		els, _ := jsonscan.ArraySpans(result[c.Start:c.End])
		for _, el := range els {
			el = at(el, c.Start)
			lit, kind, ok := blockText(result, el)
			if !ok {
				return nil
			}
			pt := part{text: -1}
			if kind != textBlock {
				pt.raw = result[el.Start:el.End]
			}
			if kind != otherBlock {
				n, ok := jsonscan.StringRunes(result[lit.Start:lit.End])
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
			text, _ := jsonscan.AppendString(make([]byte, 0, len(lit)), lit)
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

func isTrue(data []byte, s jsonscan.Span) bool {
	return s.End > s.Start && string(data[s.Start:s.End]) == "true"
}

func stringValue(data []byte, s jsonscan.Span) string {
	text, _ := jsonscan.Unquote(data[s.Start:s.End])
	return text
}

// at returns s, a span in a value that starts at base, as a span in the
// enclosing document.
func at(s jsonscan.Span, base int) jsonscan.Span {
	return jsonscan.Span{Start: base + s.Start, End: base + s.End}
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
func blockText(data []byte, block jsonscan.Span) (lit jsonscan.Span, kind int, ok bool) {
	b := data[block.Start:block.End]
	f, ok := jsonscan.ObjectSpans(b)
	if !ok {
		return lit, otherBlock, false
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
		rf, ok := jsonscan.ObjectSpans(b[r.Start:r.End])
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

// unquoteInPlace decodes the JSON string literal lit into lit's own memory
// and returns the decoded bytes. Decoding never lengthens valid UTF-8 (an
// escape is longer than what it stands for), so writing trails reading;
// invalid UTF-8, whose bytes each become a three-byte U+FFFD, is decoded
// into new memory instead. lit must be a valid literal.
func unquoteInPlace(lit []byte) []byte {
	var dst []byte
	if utf8.Valid(lit) {
		dst = lit[:0]
	} else {
		dst = make([]byte, 0, len(lit)+len(lit)/8)
	}
	out, _ := jsonscan.AppendString(dst, lit)
	return out
}
