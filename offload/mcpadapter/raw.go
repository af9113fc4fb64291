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
// small, an error, an input request, or not a result object at all.
func (a *Adapter) OffloadJSON(ctx context.Context, req *mcp.CallToolRequest, result []byte) ([]byte, bool) {
	tool, _ := callInfo(req)
	if a.names[tool] || len(result) <= a.opts.Threshold {
		return nil, false
	}
	fields, ok := ingest.ObjectSpans(result)
	if !ok || isTrue(result, fields["isError"]) || stringValue(result, fields["resultType"]) == "input_required" {
		return nil, false
	}
	var texts [][]byte
	var others []json.RawMessage
	chars := 0
	if c, ok := fields["content"]; ok {
		for _, el := range ingest.ArraySpans(result, c) {
			text, isText, err := blockText(result[el.Start:el.End])
			if err != nil {
				return nil, false
			}
			if !isText {
				others = append(others, bytes.Clone(result[el.Start:el.End]))
				continue
			}
			texts = append(texts, text)
			chars += utf8.RuneCount(text)
		}
	}
	var structured []byte
	if sc, ok := fields["structuredContent"]; ok && string(result[sc.Start:sc.End]) != "null" {
		structured = result[sc.Start:sc.End]
		chars += utf8.RuneCount(structured)
	}
	var meta json.RawMessage
	if m, ok := fields["_meta"]; ok {
		meta = bytes.Clone(result[m.Start:m.End])
	}
	data := choosePayload(texts, structured)
	if chars <= a.opts.Threshold {
		return nil, false
	}
	n, err := a.store(ctx, req, data, chars)
	if err != nil {
		return nil, false
	}
	out := struct {
		Meta              json.RawMessage   `json:"_meta,omitempty"`
		Content           []json.RawMessage `json:"content"`
		StructuredContent any               `json:"structuredContent,omitempty"`
	}{}
	out.Meta = meta
	notice, err := json.Marshal(&mcp.TextContent{Text: n.String()})
	if err != nil {
		return nil, false
	}
	out.Content = append([]json.RawMessage{notice}, others...)
	if structured != nil {
		out.StructuredContent = n
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, false
	}
	return b, true
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

// blockText returns the text of a content block that puts text into the
// context — a text block or an embedded text resource — decoded.
func blockText(block []byte) (text []byte, isText bool, err error) {
	f, ok := ingest.ObjectSpans(block)
	if !ok {
		return nil, false, errors.New("content block is not an object")
	}
	switch stringValue(block, f["type"]) {
	case "text":
		t, ok := f["text"]
		if !ok {
			return nil, false, errors.New("text block without text")
		}
		b, err := unquote(block[t.Start:t.End])
		return b, err == nil, err
	case "resource":
		r, ok := f["resource"]
		if !ok {
			return nil, false, nil
		}
		rf, ok := ingest.ObjectSpans(block[r.Start:r.End])
		if !ok {
			return nil, false, nil
		}
		t, hasText := rf["text"]
		if _, hasBlob := rf["blob"]; hasBlob || !hasText {
			return nil, false, nil
		}
		inner := block[r.Start:r.End]
		b, err := unquote(inner[t.Start:t.End])
		return b, err == nil, err
	}
	return nil, false, nil
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
