package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ctxkit/ctxkit/guard/compact"
	"github.com/ctxkit/ctxkit/internal/jsonscan"
)

// dialect maps one API's chat messages to compact's neutral form and back.
type dialect interface {
	decode(m rawMsg) (compact.Message, error)
	// setText returns the message with its text replaced, everything else
	// kept.
	setText(m rawMsg, text string) (json.RawMessage, error)
}

// rawMsg is one message as received: its JSON text, and its members as
// spans of it.
type rawMsg struct {
	text    json.RawMessage
	members []jsonscan.Member // nil for null
}

// parseMsg reads one message, an object or null.
func parseMsg(m json.RawMessage) (rawMsg, error) {
	if isNull(m) {
		return rawMsg{text: m}, nil
	}
	// Most messages have a role, content and a few more members.
	members, ok := jsonscan.AppendMembers(make([]jsonscan.Member, 0, 4), m)
	if !ok {
		return rawMsg{}, errors.New("not an object")
	}
	return rawMsg{text: m, members: members}, nil
}

// get returns the value of key (the last one, when it is repeated, as
// decoders keep it), or nil.
func (m rawMsg) get(key string) json.RawMessage {
	for i := len(m.members) - 1; i >= 0; i-- {
		if m.members[i].Key == key {
			return span(m.text, m.members[i].Value)
		}
	}
	return nil
}

// with returns the message's JSON with key set to the JSON value v: the
// other members as received, in the order received (a repeated key once,
// with the value decoders keep), key last if it is new.
func (m rawMsg) with(key string, v []byte) (json.RawMessage, error) {
	out := make([]byte, 0, len(m.text)+len(v)+len(key)+8)
	out = append(out, '{')
	set := false
	for i, mem := range m.members {
		if slices.ContainsFunc(m.members[i+1:], func(later jsonscan.Member) bool { return later.Key == mem.Key }) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, m.text[mem.KeySpan.Start:mem.KeySpan.End]...)
		out = append(out, ':')
		if mem.Key == key {
			out = append(out, v...)
			set = true
		} else {
			out = append(out, m.text[mem.Value.Start:mem.Value.End]...)
		}
	}
	if !set {
		if len(out) > 1 {
			out = append(out, ',')
		}
		lit, err := json.Marshal(key)
		if err != nil {
			return nil, err
		}
		out = append(out, lit...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// chatRequest is a parsed chat request: the top-level fields and each
// message as slices of the body as received, so that what the guard does
// not change goes upstream byte for byte, and a large body is not copied
// to be read: the only copies are the messages' decoded texts.
type chatRequest struct {
	// keys are the top-level keys in the order received (each once), with
	// their literals as written.
	keys []topKey
	top  map[string]json.RawMessage
	msgs []rawMsg
	conv compact.Conversation
}

// topKey is a top-level key and its literal, quotes included.
type topKey struct {
	name string
	lit  []byte
}

func parseChat(body []byte, d dialect) (*chatRequest, error) {
	c := &chatRequest{}
	if string(jsonscan.TrimSpace(body)) == "null" {
		// null decodes to no fields, as encoding/json has it.
		c.top = map[string]json.RawMessage{}
		return c, nil
	}
	members, ok := jsonscan.Members(body)
	if !ok {
		return nil, fmt.Errorf("request body: %w", jsonErr(body))
	}
	c.top = make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		if _, seen := c.top[m.Key]; !seen {
			c.keys = append(c.keys, topKey{m.Key, span(body, m.KeySpan)})
		}
		c.top[m.Key] = span(body, m.Value) // a repeated key: the last value, as decoders keep it
	}
	if m, ok := c.top["messages"]; ok && !isNull(m) {
		els, ok := jsonscan.ArraySpans(m)
		if !ok {
			return nil, errors.New("messages: not an array")
		}
		c.msgs = make([]rawMsg, len(els))
		for i, e := range els {
			msg, err := parseMsg(span(m, e))
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			c.msgs[i] = msg
		}
	}
	c.conv.Messages = make([]compact.Message, len(c.msgs))
	for i, m := range c.msgs {
		msg, err := d.decode(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		c.conv.Messages[i] = msg
	}
	if t, ok := c.top["tools"]; ok && !isNull(t) {
		var tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tools); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		for _, t := range tools {
			c.conv.Tools = append(c.conv.Tools, compact.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: string(t.Function.Parameters)})
		}
	}
	return c, nil
}

// rawMessages are the messages' JSON texts.
func (c *chatRequest) rawMessages() []json.RawMessage {
	out := make([]json.RawMessage, len(c.msgs))
	for i, m := range c.msgs {
		out[i] = m.text
	}
	return out
}

// span is data[s], its capacity cut so that an append to it cannot write
// into the rest of data.
func span(data []byte, s jsonscan.Span) json.RawMessage {
	return data[s.Start:s.End:s.End]
}

// jsonErr says where data stops being one valid JSON value, or that it is
// not an object.
func jsonErr(data []byte) error {
	if err := jsonscan.Validate(data); err != nil {
		return err
	}
	return errors.New("not a JSON object")
}

// build returns the request body for a compaction result: kept messages
// byte for byte, changed ones with their text replaced, notices as user
// messages of their own.
func (c *chatRequest) build(res *compact.Result, d dialect) ([]byte, error) {
	out := make([]json.RawMessage, len(res.Messages))
	for i, m := range res.Messages {
		src := res.Source[i]
		if src < 0 {
			data, err := json.Marshal(map[string]string{"role": "user", "content": m.Text})
			if err != nil {
				return nil, err
			}
			out[i] = data
			continue
		}
		if m.Text == c.conv.Messages[src].Text {
			out[i] = c.msgs[src].text
			continue
		}
		data, err := d.setText(c.msgs[src], m.Text)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", src, err)
		}
		out[i] = data
	}
	return c.with("messages", out)
}

// with returns the request body with one top-level field set to v: a
// []json.RawMessage is written as an array of its elements as they are,
// anything else as its JSON encoding. The other fields are written as
// received, in the order received (fields the request did not have go
// last, sorted), into one buffer of the body's final size.
func (c *chatRequest) with(key string, v any) ([]byte, error) {
	elems, isArray := v.([]json.RawMessage)
	var val []byte
	if !isArray {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
		val = data
	}
	// The fields to write, in order.
	var keys []topKey
	for _, k := range c.keys {
		if _, ok := c.top[k.name]; ok || k.name == key {
			keys = append(keys, k)
		}
	}
	var extra []string
	for k := range c.top {
		if !slices.ContainsFunc(keys, func(t topKey) bool { return t.name == k }) {
			extra = append(extra, k)
		}
	}
	if !slices.ContainsFunc(keys, func(t topKey) bool { return t.name == key }) && !slices.Contains(extra, key) {
		extra = append(extra, key)
	}
	slices.Sort(extra)
	for _, k := range extra {
		lit, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		keys = append(keys, topKey{k, lit})
	}

	size := 1 + len(keys)
	for _, k := range keys {
		size += len(k.lit) + 1
		switch {
		case k.name != key:
			size += len(c.top[k.name])
		case isArray:
			size += 1 + len(elems)
			for _, e := range elems {
				size += len(e)
			}
		default:
			size += len(val)
		}
	}
	out := make([]byte, 0, size)
	for i, k := range keys {
		if i == 0 {
			out = append(out, '{')
		} else {
			out = append(out, ',')
		}
		out = append(out, k.lit...)
		out = append(out, ':')
		switch {
		case k.name != key:
			out = append(out, c.top[k.name]...)
		case isArray:
			out = append(out, '[')
			for j, e := range elems {
				if j > 0 {
					out = append(out, ',')
				}
				out = append(out, e...)
			}
			out = append(out, ']')
		default:
			out = append(out, val...)
		}
	}
	return append(out, '}'), nil
}

// encodeMessages is the JSON array of msgs, as encoding/json writes it
// with HTML escaping off, written into one buffer of its exact size: an
// evicted span as large as the request is not encoded through a growing
// buffer and copied again. Each message is encoded with its text left
// empty, and the text is written in its place.
func encodeMessages(msgs []compact.Message) ([]byte, error) {
	if msgs == nil {
		return []byte("null"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	type piece struct {
		head, tail []byte // the message encoded without its text, cut where the text goes
		text       string
	}
	pieces := make([]piece, len(msgs))
	size := 2 + max(len(msgs)-1, 0) // brackets and commas
	for i, m := range msgs {
		text := m.Text
		m.Text = ""
		buf.Reset()
		if err := enc.Encode(m); err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		skel := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		// The text is the second field, after the role.
		at := len(`{"Role":`) + jsonscan.QuoteLen(string(m.Role)) + len(`,"Text":`)
		if at+2 > len(skel) || string(skel[at-len(`"Text":`):at+2]) != `"Text":""` {
			return nil, fmt.Errorf("encode message %d: no text field where expected in %.80s", i, skel)
		}
		pieces[i] = piece{head: bytes.Clone(skel[:at]), tail: bytes.Clone(skel[at+2:]), text: text}
		size += len(skel) - 2 + jsonscan.QuoteLen(text)
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, p := range pieces {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p.head...)
		out = jsonscan.AppendQuote(out, p.text)
		out = append(out, p.tail...)
	}
	return append(out, ']'), nil
}

// readSized reads r whole, at most limit bytes, into a buffer of the size
// it declares (a request's Content-Length, or -1), so that a large body is
// not grown and copied as it arrives.
func readSized(r io.Reader, size int64, limit int, what string) ([]byte, error) {
	if size <= 0 || size > int64(limit) {
		return readLimited(r, limit, what)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	// A body longer than it said is read on, within the limit.
	rest, err := readLimited(r, limit-int(size), what)
	if isTooLarge(err) {
		return nil, &tooLargeError{what: what, limit: limit}
	}
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

func isNull(m json.RawMessage) bool { return len(m) == 0 || string(m) == "null" }

// str is the JSON string m decodes to, or "" when m is not a string.
func str(m json.RawMessage) string {
	s, _ := jsonscan.Unquote(m)
	return s
}

func role(s string) compact.Role {
	switch s {
	case "system", "developer":
		return compact.RoleSystem
	case "assistant", "model":
		return compact.RoleAssistant
	case "tool", "function", "ipython":
		return compact.RoleTool
	}
	return compact.RoleUser
}

// ollamaDialect is Ollama's /api/chat: content a string, images a list of
// base64 strings, tool_calls with arguments as an object, tool results
// matched by position (tool_name) or, in newer versions, by tool_call_id.
type ollamaDialect struct{}

func (ollamaDialect) decode(f rawMsg) (compact.Message, error) {
	m := compact.Message{Role: role(str(f.get("role"))), Text: str(f.get("content")), ToolCallID: str(f.get("tool_call_id")), Name: str(f.get("tool_name"))}
	if im := f.get("images"); !isNull(im) {
		images, ok := jsonscan.ArraySpans(im)
		if !ok {
			return m, errors.New("images: not an array")
		}
		m.Images = len(images)
	}
	calls, err := decodeCalls(f.get("tool_calls"))
	m.ToolCalls = calls
	return m, err
}

func (ollamaDialect) setText(f rawMsg, text string) (json.RawMessage, error) {
	return f.with("content", jsonscan.AppendQuote(nil, text))
}

func decodeCalls(raw json.RawMessage) ([]compact.ToolCall, error) {
	if isNull(raw) {
		return nil, nil
	}
	var calls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &calls); err != nil {
		return nil, fmt.Errorf("tool_calls: %w", err)
	}
	out := make([]compact.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = compact.ToolCall{ID: c.ID, Name: c.Function.Name, Args: string(c.Function.Arguments)}
	}
	return out, nil
}

// openaiDialect is OpenAI's chat completions: content a string, null or a
// list of parts (text parts are joined; others count as images), tool
// calls with ids and results with tool_call_id.
type openaiDialect struct{}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (openaiDialect) decode(f rawMsg) (compact.Message, error) {
	m := compact.Message{Role: role(str(f.get("role"))), ToolCallID: str(f.get("tool_call_id")), Name: str(f.get("name"))}
	c := f.get("content")
	switch {
	case isNull(c):
	case c[0] == '[':
		var parts []part
		if err := json.Unmarshal(c, &parts); err != nil {
			return m, fmt.Errorf("content: %w", err)
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" || p.Type == "input_text" {
				texts = append(texts, p.Text)
			} else {
				m.Images++
			}
		}
		m.Text = strings.Join(texts, "\n")
	default:
		text, ok := jsonscan.Unquote(c)
		if !ok {
			return m, errors.New("content: not a string, null or a list of parts")
		}
		m.Text = text
	}
	calls, err := decodeCalls(f.get("tool_calls"))
	m.ToolCalls = calls
	return m, err
}

func (openaiDialect) setText(f rawMsg, text string) (json.RawMessage, error) {
	c := f.get("content")
	if len(c) == 0 || c[0] != '[' {
		return f.with("content", jsonscan.AppendQuote(nil, text))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(c, &parts); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(parts))
	done := false
	for _, p := range parts {
		var pp part
		if err := json.Unmarshal(p, &pp); err != nil {
			return nil, err
		}
		if pp.Type != "text" && pp.Type != "input_text" {
			out = append(out, p)
			continue
		}
		if done {
			continue
		}
		done = true
		data, err := json.Marshal(part{Type: pp.Type, Text: text})
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	if !done {
		return nil, errors.New("no text part to replace")
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return f.with("content", data)
}
